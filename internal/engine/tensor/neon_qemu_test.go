//go:build !arm64

package tensor

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// TestNEONUnderQEMU builds this package's tests for arm64 and runs the
// kernel tests in qemu-aarch64 (user-mode emulation of a CPU with every
// extension, SDOT included), so the NEON kernels are checked against the
// generic ones on every host, not only on arm64 machines. It proves
// correctness, not speed: emulated timings mean nothing.
func TestNEONUnderQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cross-compiling and emulating the arm64 kernel tests takes ~15 s")
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Skip("qemu-aarch64 is not installed (Debian package qemu-user; .ci/run installs it): the NEON kernels are tested natively on arm64 hosts only")
	}
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to cross-compile the arm64 tests with")
	}
	bin := t.TempDir() + "/tensor-arm64.test"
	build := exec.Command(gotool, "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the arm64 tests: %v\n%s", err, out)
	}
	run := exec.Command(qemu, "-cpu", "max", bin, "-test.v", "-test.count=1",
		"-test.run", "SIMD|VecDot|DotF32|Tile|Rows|QuantizeAct|ExpSub|SwiGLU|CapFeatures")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("arm64 kernel tests under qemu: %v\n%s", err, out)
	}
	// Every SIMD comparison must have run on both NEON paths, not skipped.
	for _, test := range []string{"TestSIMDVecDotExact", "TestSIMDVecDotExtremes", "TestSIMDVecDotRandom", "TestSIMDDotF32", "TestSIMDQuantizeAct", "TestDotF32Tile", "TestVecDotTile", "TestVecDotRows"} {
		for _, path := range []string{"neon", "neon-dotprod"} {
			if !regexp.MustCompile(`--- PASS: ` + test + `/` + path + ` `).Match(out) {
				t.Errorf("%s/%s did not pass under qemu:\n%s", test, path, out)
			}
		}
	}
}
