//go:build darwin

package telemetry

import "golang.org/x/sys/unix"

// ReadMemory reads total memory and the free plus inactive pages.
func ReadMemory() (Memory, error) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return Memory{}, err
	}
	page := int64(unix.Getpagesize())
	free, _ := unix.SysctlUint32("vm.page_free_count")
	inactive, _ := unix.SysctlUint32("vm.page_inactive_count")
	return Memory{TotalBytes: int64(total), AvailableBytes: (int64(free) + int64(inactive)) * page}, nil
}
