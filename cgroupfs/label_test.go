package cgroupfs

import (
	"testing"
	"unicode/utf8"
)

func TestLabelValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/system.slice/kubelet.service", "/system.slice/kubelet.service"},
		{"/bad\xffutf8", `/bad\xffutf8`},
		{"/\xc3", `/\xc3`},                 // a cut sequence
		{"/\xed\xa0\x80", `/\xed\xa0\x80`}, // a surrogate, invalid in UTF-8
		{`/bad\xffutf8`, `/bad\\xffutf8`},  // the same text, literally
		{`/system-getty\x2d.slice`, `/system-getty\\x2d.slice`},
		{"/tab\there\r\x1b[31m", "/tab\there\r\x1b[31m"}, // valid: kept
		{"/日本語", "/日本語"},
	}
	for _, tt := range tests {
		got := LabelValue(tt.in)
		if got != tt.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("LabelValue(%q) = %q: not UTF-8", tt.in, got)
		}
	}
}

func TestLabelValueAllocatesNothingForPlainPaths(t *testing.T) {
	p := "/kubepods.slice/kubepods-burstable.slice"
	if n := testing.AllocsPerRun(100, func() { _ = LabelValue(p) }); n != 0 {
		t.Errorf("LabelValue of a plain path: %v allocations, want 0", n)
	}
}

// unescape reverses LabelValue, to show that it loses nothing.
func unescape(s string) (string, bool) {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b = append(b, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			b = append(b, '\\')
			i++
		case i+3 < len(s) && s[i+1] == 'x':
			var v byte
			for _, c := range []byte(s[i+2 : i+4]) {
				switch {
				case '0' <= c && c <= '9':
					v = v<<4 | (c - '0')
				case 'a' <= c && c <= 'f':
					v = v<<4 | (c - 'a' + 10)
				default:
					return "", false
				}
			}
			b = append(b, v)
			i += 3
		default:
			return "", false
		}
	}
	return string(b), true
}

// FuzzLabelValue checks that every value is UTF-8 and that the original
// bytes come back from it, so two paths never share a label.
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"/", "/bad\xffutf8", `/bad\xffutf8`, "/\\", "/\xc3\x28", "/日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := LabelValue(s)
		if !utf8.ValidString(got) {
			t.Fatalf("LabelValue(%q) = %q: not UTF-8", s, got)
		}
		back, ok := unescape(got)
		if !ok || back != s {
			t.Fatalf("LabelValue(%q) = %q, which reads back as %q (%v)", s, got, back, ok)
		}
	})
}
