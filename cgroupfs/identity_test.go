package cgroupfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Ids and uids the identity table uses: 64 hex digits, and pod uids with
// dashes and as the systemd driver writes them.
const (
	cidA   = "a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333"
	cidB   = "6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6"
	uid    = "6c2a7f1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	uidU   = "6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b"
	static = "0f4e5c1bd0b8a6d0e6c6a2f7e3b9d4c1" // a static pod's uid: a hash
)

func TestParseIdentity(t *testing.T) {
	tests := []struct {
		name string
		path string
		want Identity
	}{
		{"root", "/", Identity{Name: "/"}},
		{"systemd unit", "/system.slice/kubelet.service", Identity{Name: "kubelet.service"}},
		{"containerd daemon", "/system.slice/containerd.service", Identity{Name: "containerd.service"}},
		{"kubepods cgroupfs", "/kubepods", Identity{Name: "kubepods"}},
		{"qos cgroupfs", "/kubepods/burstable", Identity{Name: "burstable", QoS: QoSBurstable}},
		{"pod cgroupfs burstable", "/kubepods/burstable/pod" + uid,
			Identity{Name: "pod" + uid, PodUID: uid, QoS: QoSBurstable}},
		{"container cgroupfs burstable", "/kubepods/burstable/pod" + uid + "/" + cidA,
			Identity{Name: cidA, ContainerID: cidA, PodUID: uid, QoS: QoSBurstable}},
		{"container cgroupfs guaranteed", "/kubepods/pod" + uid + "/" + cidA,
			Identity{Name: cidA, ContainerID: cidA, PodUID: uid, QoS: QoSGuaranteed}},
		{"container cgroupfs besteffort", "/kubepods/besteffort/pod" + uid + "/" + cidA,
			Identity{Name: cidA, ContainerID: cidA, PodUID: uid, QoS: QoSBestEffort}},
		{"cri-o cgroupfs", "/kubepods/besteffort/pod" + uid + "/crio-" + cidA,
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeCRIO, PodUID: uid, QoS: QoSBestEffort}},
		{"static pod", "/kubepods/burstable/pod" + static,
			Identity{Name: "pod" + static, PodUID: static, QoS: QoSBurstable}},
		{"kubepods systemd", "/kubepods.slice/kubepods-besteffort.slice", Identity{Name: "kubepods-besteffort.slice", QoS: QoSBestEffort}},
		{"containerd systemd burstable",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd, PodUID: uid, QoS: QoSBurstable}},
		{"pod systemd guaranteed", "/kubepods.slice/kubepods-pod" + uidU + ".slice",
			Identity{Name: "kubepods-pod" + uidU + ".slice", PodUID: uid, QoS: QoSGuaranteed}},
		{"cri-o systemd", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeCRIO, PodUID: uid, QoS: QoSBestEffort}},
		{"cri-o conmon systemd", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-conmon-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeCRIO, Monitor: true, PodUID: uid, QoS: QoSBestEffort}},
		{"cri-dockerd systemd", "/kubepods.slice/kubepods-pod" + uidU + ".slice/docker-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeDocker, PodUID: uid, QoS: QoSGuaranteed}},
		// kubelet on the systemd driver, containerd on cgroupfs: one
		// directory named in systemd's slice:prefix:name notation.
		{"systemd path over cgroupfs burstable", "/kubepods-burstable-pod" + uidU + ".slice:cri-containerd:" + cidA,
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd, PodUID: uid, QoS: QoSBurstable}},
		{"systemd path over cgroupfs guaranteed", "/kubepods-pod" + uidU + ".slice:cri-containerd:" + cidA,
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd, PodUID: uid, QoS: QoSGuaranteed}},
		{"systemd path over cgroupfs cri-o", "/kubepods-besteffort-pod" + uidU + ".slice:crio:" + cidA,
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeCRIO, PodUID: uid, QoS: QoSBestEffort}},
		{"systemd path over cgroupfs nested", "/kubepods-burstable-pod" + uidU + ".slice:cri-containerd:" + cidA + "/inner",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd, PodUID: uid, QoS: QoSBurstable}},
		{"slice notation without a container id", "/kubepods-burstable-pod" + uidU + ".slice:cri-containerd:abc",
			Identity{Name: "kubepods-burstable-pod" + uidU + ".slice:cri-containerd:abc"}},
		{"slice notation outside kubepods", "/system.slice:docker:" + cidA, Identity{Name: "system.slice:docker:" + cidA}},
		{"docker cgroupfs", "/docker/" + cidA, Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeDocker}},
		{"docker systemd", "/system.slice/docker-" + cidA + ".scope", Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeDocker}},
		{"systemd in a container", "/system.slice/docker-" + cidA + ".scope/system.slice/cron.service",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeDocker}},
		{"ctr default namespace", "/default/redis", Identity{Name: "redis", ContainerID: "redis", Runtime: RuntimeContainerd}},
		{"nerdctl systemd", "/system.slice/nerdctl-" + cidA + ".scope", Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd}},
		{"podman machine.slice", "/machine.slice/libpod-" + cidA + ".scope", Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimePodman}},
		{"podman payload cgroup", "/machine.slice/libpod-" + cidA + ".scope/container", Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimePodman}},
		{"podman conmon", "/machine.slice/libpod-conmon-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimePodman, Monitor: true}},
		{"podman rootless", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimePodman}},
		{"user session", "/user.slice/user-1000.slice/session-3.scope", Identity{Name: "session-3.scope"}},
		{"kind systemd", "/system.slice/docker-" + cidB + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cidA + ".scope",
			Identity{Name: cidA, ContainerID: cidA, Runtime: RuntimeContainerd, PodUID: uid, QoS: QoSBurstable}},
		{"kind node qos", "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice",
			Identity{Name: "kubelet-kubepods-besteffort.slice", QoS: QoSBestEffort}},
		{"kind cgroupfs", "/docker/" + cidB + "/kubelet/kubepods/besteffort/pod" + uid + "/" + cidA,
			Identity{Name: cidA, ContainerID: cidA, PodUID: uid, QoS: QoSBestEffort}},
		{"kind node qos cgroupfs", "/docker/" + cidB + "/kubepods/burstable", Identity{Name: "burstable", QoS: QoSBurstable}},
		{"kind node kubelet", "/docker/" + cidB + "/kubelet.slice", Identity{Name: cidB, ContainerID: cidB, Runtime: RuntimeDocker}},
		{"upper-case hex is no id", "/docker/" + strings.ToUpper(cidA), Identity{Name: strings.ToUpper(cidA)}},
		{"short id", "/docker/abc123", Identity{Name: "abc123"}},
		{"unknown scope prefix", "/system.slice/foo-" + cidA + ".scope", Identity{Name: "foo-" + cidA + ".scope"}},
		{"pod-like name outside kubepods", "/system.slice/pod" + uid, Identity{Name: "pod" + uid}},
		{"podman is no pod uid", "/kubepods/burstable/podman", Identity{Name: "podman", QoS: QoSBurstable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.ID = tt.path
			if diff := cmp.Diff(tt.want, ParseIdentity(tt.path)); diff != "" {
				t.Errorf("ParseIdentity(%q) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
}

func FuzzParseIdentity(f *testing.F) {
	f.Add("/")
	f.Add("")
	f.Add("//a//b/")
	f.Add("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cidA + ".scope")
	f.Add("/docker/" + cidB + "/kubepods/pod" + uid + "/crio-conmon-" + cidA)
	f.Add("/default/x")
	f.Fuzz(func(t *testing.T, path string) {
		id := ParseIdentity(path)
		if id.ID != path {
			t.Fatalf("ParseIdentity(%q).ID = %q", path, id.ID)
		}
		if id.ContainerID != "" && id.Name != id.ContainerID {
			t.Fatalf("ParseIdentity(%q): Name %q, ContainerID %q", path, id.Name, id.ContainerID)
		}
		if id.Name == "" && strings.Trim(path, "/") != "" {
			t.Fatalf("ParseIdentity(%q): empty Name", path)
		}
		if id.PodUID != "" && (strings.Contains(id.PodUID, "_") || id.QoS == "") {
			t.Fatalf("ParseIdentity(%q): PodUID %q QoS %q", path, id.PodUID, id.QoS)
		}
	})
}
