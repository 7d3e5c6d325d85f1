package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmeFlags returns the flags of the README's flag table and the
// default each row gives ("" for none).
func readmeFlags(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Flags\n")
	if !ok {
		t.Fatal("no ## Flags section in README.md")
	}
	flags := map[string]string{}
	row := regexp.MustCompile("^\\| (`--[^|]+?) \\|\\s*([^|]*?)\\s*\\|")
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "## ") {
			break
		}
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		names := strings.Split(m[1], ", ")
		defs := strings.Split(m[2], ", ")
		for i, n := range names {
			def := ""
			if len(defs) == len(names) {
				def = strings.Trim(strings.TrimSpace(defs[i]), "`")
			}
			flags[strings.Trim(n, "`")] = def
		}
	}
	return flags
}

// helpFlags returns the flags schedstatd --help lists, with the default
// it shows ("" for none).
func helpFlags(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command(binary(t), "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	line := regexp.MustCompile(`^\s+(?:-\w, )?--(?:\[no-\])?([\w.-]+)(?:=(\S+))?`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			flags["--"+m[1]] = strings.Trim(m[2], `"`)
		}
	}
	delete(flags, "--help")
	return flags
}

// TestREADMEFlagTableMatchesHelp: every flag --help lists is in the
// README's table and every flag there exists, with the same default.
func TestREADMEFlagTableMatchesHelp(t *testing.T) {
	readme, help := readmeFlags(t), helpFlags(t)
	names := func(m map[string]string) []string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		slices.Sort(s)
		return s
	}
	if diff := cmp.Diff(names(help), names(readme)); diff != "" {
		t.Errorf("flags of --help (-) and of the README's table (+):\n%s", diff)
	}
	for name, def := range help {
		want, ok := readme[name]
		if !ok || def == "" {
			continue
		}
		if want == "none" {
			want = ""
		}
		if want != def {
			t.Errorf("%s: --help shows the default %q, the README %q", name, def, want)
		}
	}
}
