package cri

import (
	"context"
	"encoding/json"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxImage asks the runtime's verbose Status for the image it runs pod
// sandboxes (pause containers) from, as cAdvisor shows it on their
// cgroups: containerd's CRI plugin reports its config, with sandboxImage
// (1.x) or pinnedImages.sandbox (2.x). CRI does not list a sandbox's
// image, and a runtime that says nothing leaves it "".
func (c *Client) sandboxImage(ctx context.Context) string {
	st, err := call(ctx, c.cfg.CallTimeout, func(ctx context.Context) (*runtimeapi.StatusResponse, error) {
		return c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	})
	if err != nil {
		c.cfg.Logger.Debug("RuntimeService/Status failed; sandbox cgroups get no image label", "err", err)
		return ""
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
		PinnedImages struct {
			Sandbox string `json:"sandbox"`
		} `json:"pinnedImages"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["config"]), &cfg); err != nil {
		return ""
	}
	img := cfg.SandboxImage
	if img == "" {
		img = cfg.PinnedImages.Sandbox
	}
	if img == "" {
		return ""
	}
	return normalizeImage(img)
}
