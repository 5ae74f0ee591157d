package telemetry

import "testing"

func TestReadMemory(t *testing.T) {
	m, err := ReadMemory()
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalBytes <= 0 || m.AvailableBytes <= 0 || m.AvailableBytes > m.TotalBytes {
		t.Fatalf("implausible reading %+v", m)
	}
}

func TestReadCPU(t *testing.T) {
	c := ReadCPU()
	if c.Cores < 1 || c.Load1 < 0 {
		t.Fatalf("implausible reading %+v", c)
	}
}
