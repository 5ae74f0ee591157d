//go:build linux

package netns

import (
	"fmt"
	"strings"
	"time"
)

// CmdError is a failed setup, partition or Exec command, with its output.
type CmdError struct {
	Namespace string   // "" for the root namespace
	Args      []string // the full command line run
	Err       error    // from exec: an *exec.ExitError, a start failure or a timeout
	Output    string   // combined stdout and stderr
}

func (e *CmdError) Error() string {
	where := ""
	if e.Namespace != "" {
		where = " (in " + e.Namespace + ")"
	}
	return fmt.Sprintf("netns: %s%s: %v: %s", strings.Join(e.Args, " "), where, e.Err, strings.TrimSpace(e.Output))
}

func (e *CmdError) Unwrap() error { return e.Err }

// LogTimeoutError says that no line of a process's output matched a
// pattern in time, or before the process exited.
type LogTimeoutError struct {
	Proc    string        // process name
	Host    string        // host name
	Pattern string        // the regexp waited for
	Timeout time.Duration // how long it was waited for
	Exited  bool          // the process exited before the timeout
	Tail    string        // the last lines of its output
}

func (e *LogTimeoutError) Error() string {
	why := fmt.Sprintf("within %v", e.Timeout)
	if e.Exited {
		why = "before it exited"
	}
	return fmt.Sprintf("netns: %s on %s printed no line matching %q %s; its output ends:\n%s", e.Proc, e.Host, e.Pattern, why, e.Tail)
}
