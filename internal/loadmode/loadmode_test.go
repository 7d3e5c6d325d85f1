package loadmode

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, s := range Modes() {
		if m, err := Parse(s); err != nil || string(m) != s {
			t.Errorf("Parse(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "true", "iter", "ON"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}

// TestSelect: each mode opens or not, and logs one line saying which.
func TestSelect(t *testing.T) {
	msg := Messages{Name: "thing", Off: "thing off", Loaded: "thing on", Fallback: "thing unavailable"}
	refused := errors.New("refused")
	for _, tc := range []struct {
		mode    Mode
		openErr error
		opens   int
		wantErr bool
		wantLog string
	}{
		{Auto, nil, 1, false, "level=INFO msg=\"thing on\""},
		{Auto, refused, 1, false, "level=WARN msg=\"thing unavailable\" err=refused"},
		{On, nil, 1, false, "level=INFO msg=\"thing on\""},
		{On, refused, 1, true, ""},
		{Off, nil, 0, false, "level=INFO msg=\"thing off\""},
		{"yes", nil, 0, true, ""},
	} {
		var log bytes.Buffer
		opens := 0
		v := 1
		got, err := Select(tc.mode, func() (*int, error) {
			opens++
			if tc.openErr != nil {
				return nil, tc.openErr
			}
			return &v, nil
		}, slog.New(slog.NewTextHandler(&log, nil)), msg)
		if opens != tc.opens || (err != nil) != tc.wantErr {
			t.Errorf("%s, open error %v: %d opens, err %v; want %d opens, error %v", tc.mode, tc.openErr, opens, err, tc.opens, tc.wantErr)
		}
		if (got != nil) != (err == nil && tc.openErr == nil && tc.opens == 1) {
			t.Errorf("%s, open error %v: got %v", tc.mode, tc.openErr, got)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "thing: ") {
			t.Errorf("%s: error %q does not name the source", tc.mode, err)
		}
		if tc.wantLog != "" && (!strings.Contains(log.String(), tc.wantLog) || strings.Count(log.String(), "\n") != 1) {
			t.Errorf("%s, open error %v: log %q, want one line with %q", tc.mode, tc.openErr, log.String(), tc.wantLog)
		}
	}
}
