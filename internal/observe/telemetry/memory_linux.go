//go:build linux

package telemetry

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadMemory reads MemTotal and MemAvailable from /proc/meminfo.
func ReadMemory() (Memory, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			m.TotalBytes = kb << 10
		case "MemAvailable:":
			m.AvailableBytes = kb << 10
		}
	}
	if m.TotalBytes == 0 {
		return Memory{}, fmt.Errorf("telemetry: no MemTotal in /proc/meminfo")
	}
	return m, sc.Err()
}
