// Package kernels runs the project's real-kernel tests on the kernels
// schedstatd supports, each in a virtual machine with a pure cgroup v2
// hierarchy: Debian's 5.10 (bullseye), 6.1 (bookworm) and 6.12
// (bookworm-backports), booted by qemu under software emulation.
//
// Its test, run by `make test-kernels`, fetches the kernel packages with
// apt through a private configuration, builds the test binaries with
// `go test -c`, packs them with Debian's static busybox into an initramfs,
// boots each kernel and reports every test of every binary as a subtest
// named kernel/package/test. Kernels and images are cached between runs
// under the cache directory (see cacheDir).
package kernels
