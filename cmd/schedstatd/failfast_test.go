package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

func TestFailFast(t *testing.T) {
	e2e.RequireRoot(t)
	tmp := t.TempDir()
	badYAML := filepath.Join(tmp, "bad.yml")
	if err := os.WriteFile(badYAML, []byte("tls_server_config: [unclosed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missingCert := filepath.Join(tmp, "missing-cert.yml")
	if err := os.WriteFile(missingCert, []byte("tls_server_config:\n  cert_file: /nonexistent/cert.pem\n  key_file: /nonexistent/key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "unknown long flag '--no-such-flag'"},
		{"missing cgroupfs", []string{"--path.cgroupfs=/nonexistent/cgroup"}, "/nonexistent/cgroup"},
		{"non-cgroup cgroupfs", []string{"--path.cgroupfs=" + tmp}, tmp},
		{"unknown hierarchy", []string{"--cgroup.hierarchy=nosuchctrl"}, "nosuchctrl"},
		{"missing procfs", []string{"--path.procfs=/nonexistent/proc"}, "/nonexistent/proc"},
		{"non-proc procfs", []string{"--path.procfs=" + tmp}, "not a procfs mount"},
		{"missing web config", []string{"--web.config.file=/nonexistent/web.yml"}, "/nonexistent/web.yml"},
		{"malformed web config", []string{"--web.config.file=" + badYAML}, badYAML},
		{"web config naming missing files", []string{"--web.config.file=" + missingCert}, "missing-cert.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), append([]string{"--web.listen-address=" + freeAddr(t)}, tc.args...)...)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() {
				out, err = cmd.CombinedOutput()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running after 20s; output:\n%s", out)
			}
			if err == nil {
				t.Fatalf("exited 0; output:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not name %q:\n%s", tc.want, out)
			}
		})
	}
}
