package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The translation of a pod template into the CRI requests kubelet makes
// for it (k8s.io/kubernetes/pkg/kubelet/kuberuntime, v1.33:
// generatePodSandboxConfig, generateContainerConfig and
// determineEffectiveSecurityContext). It handles the fields the DaemonSet
// uses and fails on any other field that is set, so a field added to the
// manifest cannot go untested by being ignored here.

// criNode is what the translation needs of the node.
type criNode struct {
	// hostPaths maps a hostPath volume's path to the directory that
	// stands for it on this machine; a path not in it is the machine's.
	hostPaths map[string]string
	// memoryBytes is the node's memory, for the OOM score of a
	// burstable container.
	memoryBytes int64
	// cgroupParent returns the pod cgroup of a QoS class and pod uid.
	cgroupParent func(qos, uid string) string
	// logDir is where the pods' log directories are made.
	logDir string
}

// criPod is a pod as the CRI is asked to run it.
type criPod struct {
	qos        string
	sandbox    *runtimeapi.PodSandboxConfig
	containers []*runtimeapi.ContainerConfig
}

// Kubelet's labels on sandboxes and containers.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// Kubelet's default masked and read-only paths of a container's /proc and
// /sys (pkg/securitycontext, the Default proc mount).
var (
	defaultMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// errUnhandled is the error of a field the translation does not know.
var errUnhandled = errors.New("set, but not translated into the CRI here")

// podToCRI translates the pod template tmpl, for a pod named name in
// namespace with uid, into the CRI configs kubelet makes.
func podToCRI(tmpl corev1.PodTemplateSpec, name, namespace, uid string, node criNode) (*criPod, error) {
	spec := tmpl.Spec
	if err := unhandledPodFields(spec); err != nil {
		return nil, err
	}
	qos := qosClass(spec)
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	}
	if spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels[labelPodName], labels[labelPodNamespace], labels[labelPodUID] = name, namespace, uid
	podSC := spec.SecurityContext
	if podSC == nil {
		podSC = &corev1.PodSecurityContext{}
	}
	sandboxSC := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: ns,
		Seccomp:          seccomp(podSC.SeccompProfile),
		RunAsUser:        int64Value(podSC.RunAsUser),
		RunAsGroup:       int64Value(podSC.RunAsGroup),
	}
	sandboxSC.SupplementalGroups = append(sandboxSC.SupplementalGroups, podSC.SupplementalGroups...)
	p := &criPod{qos: qos, sandbox: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid},
		LogDirectory: filepath.Join(node.logDir, namespace+"_"+name+"_"+uid),
		Labels:       labels,
		Annotations:  tmpl.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    node.cgroupParent(qos, uid),
			SecurityContext: sandboxSC,
		},
	}}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range spec.Containers {
		for _, port := range c.Ports {
			p.sandbox.PortMappings = append(p.sandbox.PortMappings, &runtimeapi.PortMapping{
				Protocol: runtimeapi.Protocol(runtimeapi.Protocol_value[string(orDefault(port.Protocol, corev1.ProtocolTCP))]), ContainerPort: port.ContainerPort, HostPort: port.HostPort, HostIp: port.HostIP,
			})
		}
		cc, err := containerToCRI(c, spec, podSC, ns, qos, volumes, node)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		cc.Labels = map[string]string{labelContainerName: c.Name, labelPodName: name, labelPodNamespace: namespace, labelPodUID: uid}
		p.containers = append(p.containers, cc)
	}
	return p, nil
}

// containerToCRI translates one container.
func containerToCRI(c corev1.Container, spec corev1.PodSpec, podSC *corev1.PodSecurityContext, ns *runtimeapi.NamespaceOption, qos string,
	volumes map[string]corev1.Volume, node criNode) (*runtimeapi.ContainerConfig, error) {
	if err := unhandledContainerFields(c); err != nil {
		return nil, err
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if strings.Contains(a, "$(") {
			return nil, fmt.Errorf("argument %q: $(VAR) expansion %w", a, errUnhandled)
		}
	}
	cc := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
		Image:    &runtimeapi.ImageSpec{Image: c.Image},
		Command:  c.Command,
		Args:     c.Args,
		LogPath:  c.Name + "/0.log",
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	lsc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: ns,
		Privileged:       sc.Privileged != nil && *sc.Privileged,
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		RunAsUser:        int64Value(firstNonNil(sc.RunAsUser, podSC.RunAsUser)),
		RunAsGroup:       int64Value(firstNonNil(sc.RunAsGroup, podSC.RunAsGroup)),
		Seccomp:          seccomp(firstNonNil(sc.SeccompProfile, podSC.SeccompProfile)),
		// kubelet: no_new_privs unless escalation is allowed, or the
		// container is privileged or adds CAP_SYS_ADMIN.
		NoNewPrivs:    sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		MaskedPaths:   defaultMaskedPaths,
		ReadonlyPaths: defaultReadonlyPaths,
	}
	lsc.SupplementalGroups = append(lsc.SupplementalGroups, podSC.SupplementalGroups...)
	if sc.Capabilities != nil {
		lsc.Capabilities = &runtimeapi.Capability{}
		for _, cp := range sc.Capabilities.Add {
			lsc.Capabilities.AddCapabilities = append(lsc.Capabilities.AddCapabilities, string(cp))
		}
		for _, cp := range sc.Capabilities.Drop {
			lsc.Capabilities.DropCapabilities = append(lsc.Capabilities.DropCapabilities, string(cp))
		}
	}
	// kubelet's verifyRunAsNonRoot.
	if nonRoot := firstNonNil(sc.RunAsNonRoot, podSC.RunAsNonRoot); nonRoot != nil && *nonRoot && (lsc.RunAsUser == nil || lsc.RunAsUser.Value == 0) {
		return nil, errors.New("runAsNonRoot with uid 0 (or the image's user): kubelet refuses to start it")
	}
	cc.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: lsc, Resources: resources(c.Resources, qos, node.memoryBytes)}

	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no such volume", vm.Name)
		}
		if v.HostPath == nil || !reflect.DeepEqual(v.VolumeSource, corev1.VolumeSource{HostPath: v.HostPath}) {
			return nil, fmt.Errorf("volume %s: a source other than hostPath %w", v.Name, errUnhandled)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" || vm.MountPropagation != nil {
			return nil, fmt.Errorf("volume mount %s: subPath or mountPropagation %w", vm.Name, errUnhandled)
		}
		host := v.HostPath.Path
		if p, ok := node.hostPaths[host]; ok {
			host = p
		}
		if err := checkHostPath(host, v.HostPath.Type); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		m := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
			// kubelet asks for it only where the runtime says it can;
			// IfPossible falls back to a plain read-only mount.
			return nil, fmt.Errorf("volume mount %s: recursiveReadOnly %w", vm.Name, errUnhandled)
		}
		cc.Mounts = append(cc.Mounts, m)
	}
	return cc, nil
}

// checkHostPath does kubelet's check of a hostPath volume's type: a
// Directory must exist, a DirectoryOrCreate is made (mode 0755).
func checkHostPath(path string, typ *corev1.HostPathType) error {
	switch orDefault(deref(typ), corev1.HostPathUnset) {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(path, 0o755)
	case corev1.HostPathDirectory:
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
		return nil
	}
	return fmt.Errorf("hostPath type %s %w", *typ, errUnhandled)
}

// qosClass returns the pod's QoS class as the cgroup name kubelet's
// cgroupfs driver gives it: "" (guaranteed), "burstable" or "besteffort".
func qosClass(spec corev1.PodSpec) string {
	some, all := false, true
	for _, c := range spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := c.Resources.Requests[r]
			lim, okLim := c.Resources.Limits[r]
			if okReq || okLim {
				some = true
			}
			if !okLim || (okReq && req.Cmp(lim) != 0) {
				all = false
			}
		}
	}
	switch {
	case !some:
		return "besteffort"
	case all:
		return ""
	}
	return "burstable"
}

// resources returns the container's cgroup settings as kubelet computes
// them: CPU shares from the request, CFS quota from the limit (period
// 100 ms), the memory limit, and the OOM score adjustment of its class.
func resources(r corev1.ResourceRequirements, qos string, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	const period = 100000
	out := &runtimeapi.LinuxContainerResources{CpuShares: 2}
	if req, ok := r.Requests[corev1.ResourceCPU]; ok {
		out.CpuShares = max(2, req.MilliValue()*1024/1000)
	} else if lim, ok := r.Limits[corev1.ResourceCPU]; ok {
		out.CpuShares = max(2, lim.MilliValue()*1024/1000)
	}
	if lim, ok := r.Limits[corev1.ResourceCPU]; ok {
		out.CpuPeriod, out.CpuQuota = period, max(1000, lim.MilliValue()*period/1000)
	}
	if lim, ok := r.Limits[corev1.ResourceMemory]; ok {
		out.MemoryLimitInBytes = lim.Value()
	}
	switch qos {
	case "":
		out.OomScoreAdj = -997
	case "besteffort":
		out.OomScoreAdj = 1000
	default:
		req := r.Requests[corev1.ResourceMemory]
		out.OomScoreAdj = min(999, max(3, 1000-(1000*req.Value())/nodeMemory))
	}
	return out
}

// unhandledPodFields fails on a pod spec field that is set and that
// neither the translation takes nor only the scheduler or API server
// reads.
func unhandledPodFields(spec corev1.PodSpec) error {
	rest := spec
	// Translated.
	rest.Containers, rest.Volumes, rest.HostPID, rest.HostNetwork, rest.HostIPC = nil, nil, false, false, false
	if sc := rest.SecurityContext; sc != nil {
		c := *sc
		c.SeccompProfile, c.RunAsUser, c.RunAsGroup, c.RunAsNonRoot, c.SupplementalGroups = nil, nil, nil, nil, nil
		if !reflect.DeepEqual(c, corev1.PodSecurityContext{}) {
			return fmt.Errorf("pod securityContext %+v: %w", c, errUnhandled)
		}
		rest.SecurityContext = nil
	}
	// No token: nothing to mount. No service links: no variables.
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		return fmt.Errorf("a service account token: %w", errUnhandled)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		return fmt.Errorf("service link variables: %w", errUnhandled)
	}
	rest.AutomountServiceAccountToken, rest.EnableServiceLinks, rest.ServiceAccountName = nil, nil, ""
	// The scheduler's, or the test's at stop (the grace period).
	rest.NodeSelector, rest.Tolerations, rest.PriorityClassName, rest.Affinity, rest.TerminationGracePeriodSeconds = nil, nil, "", nil, nil
	if !reflect.DeepEqual(rest, corev1.PodSpec{}) {
		return fmt.Errorf("pod spec %+v: %w", rest, errUnhandled)
	}
	return nil
}

// unhandledContainerFields fails on a container field that is set and
// that the translation does not take; the probes are the test's to run.
func unhandledContainerFields(c corev1.Container) error {
	rest := c
	rest.Name, rest.Image, rest.ImagePullPolicy, rest.Command, rest.Args, rest.Ports = "", "", "", nil, nil, nil
	rest.Resources, rest.SecurityContext, rest.VolumeMounts = corev1.ResourceRequirements{}, nil, nil
	rest.ReadinessProbe, rest.LivenessProbe = nil, nil
	if !reflect.DeepEqual(rest, corev1.Container{}) {
		return fmt.Errorf("%+v: %w", rest, errUnhandled)
	}
	if sc := c.SecurityContext; sc != nil {
		s := *sc
		s.Capabilities, s.Privileged, s.ReadOnlyRootFilesystem, s.RunAsUser, s.RunAsGroup, s.RunAsNonRoot, s.AllowPrivilegeEscalation, s.SeccompProfile = nil, nil, nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(s, corev1.SecurityContext{}) {
			return fmt.Errorf("securityContext %+v: %w", s, errUnhandled)
		}
	}
	if len(c.Resources.Claims) > 0 {
		return fmt.Errorf("resource claims: %w", errUnhandled)
	}
	for r := range c.Resources.Limits {
		if r != corev1.ResourceCPU && r != corev1.ResourceMemory {
			return fmt.Errorf("limit of %s: %w", r, errUnhandled)
		}
	}
	return nil
}

// seccomp translates a seccomp profile; nil (Unconfined, as kubelet's
// default without --seccomp-default) stays nil.
func seccomp(p *corev1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case corev1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: deref(p.LocalhostProfile)}
}

func int64Value(p *int64) *runtimeapi.Int64Value {
	if p == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *p}
}

func firstNonNil[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
