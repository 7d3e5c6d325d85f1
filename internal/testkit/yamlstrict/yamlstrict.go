// Package yamlstrict decodes Kubernetes manifests strictly, for the tests
// of deploy/ and of the chart: a field the Go type has no place for fails,
// and so does one lost or renamed on the way (encoding/json, under
// sigs.k8s.io/yaml, matches field names regardless of case, so a field
// spelt "hostPid" would otherwise pass as hostPID).
package yamlstrict

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Decode decodes the YAML document data into out, strictly; a stream of
// more than one document fails.
func Decode(data []byte, out any) error {
	if bytes.Contains(data, []byte("\n---")) {
		return fmt.Errorf("holds more than one document")
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return err
	}
	var written, read any
	if err := yaml.Unmarshal(data, &written); err != nil {
		return err
	}
	back, err := yaml.Marshal(out)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(back, &read); err != nil {
		return err
	}
	return subset("", written, read)
}

// subset fails unless every field and value of want is in got.
func subset(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: decoded as %T", path, got)
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok && !isZero(v) {
				return fmt.Errorf("%s.%s: lost in decoding (misspelt?)", path, k)
			}
			if !ok {
				continue // an omitempty field at its zero value
			}
			if err := subset(path+"."+k, v, gv); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: decoded as %v", path, got)
		}
		for i := range w {
			if err := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Errorf("%s: %v decoded as %v", path, want, got)
		}
	}
	return nil
}

// isZero reports whether a decoded YAML value is its type's zero value.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
