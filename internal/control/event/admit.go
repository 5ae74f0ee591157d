package event

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Role is the capacity in which a node submits an event to the master.
type Role uint8

const (
	// RoleWorker submits local facts about its own runners and downloads.
	RoleWorker Role = iota + 1
	// RoleMaster submits its own decisions.
	RoleMaster
)

func (r Role) String() string {
	switch r {
	case RoleWorker:
		return "worker"
	case RoleMaster:
		return "master"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Source is who submitted an event: a role and the submitting node, as the
// transport authenticated it.
type Source struct {
	Role Role
	Node ids.NodeID
}

func (s Source) String() string { return fmt.Sprintf("%s %s", s.Role, s.Node) }

// Admit decides whether the master may order ev from source (seed CTRL-04).
// The master's own decisions are admitted; a worker may submit only local
// facts, and only about itself: its runners' status, terminal download
// outcomes, and the digests of the API keys it was configured with.
// Everything else (placements, deletions, membership, tracing, elections)
// is a master decision. ev must also validate.
func Admit(source Source, ev Event) error {
	if ev == nil {
		return &AdmissionError{Source: source, Reason: "no event"}
	}
	if err := ev.Validate(); err != nil {
		return err
	}
	switch source.Role {
	case RoleMaster:
		return nil
	case RoleWorker:
	default:
		return &AdmissionError{Source: source, Kind: ev.Kind(), Reason: "unknown role"}
	}
	var about ids.NodeID
	switch e := ev.(type) {
	case RunnerStatusUpdated:
		about = e.Node
	case DownloadCompleted:
		about = e.Node
	case DownloadFailed:
		about = e.Node
	case APIKeysSet:
		about = e.Node
	default:
		return &AdmissionError{Source: source, Kind: ev.Kind(), Reason: "a master-only decision"}
	}
	if about != source.Node {
		return &AdmissionError{Source: source, Kind: ev.Kind(),
			Reason: fmt.Sprintf("reports about node %s; a worker reports only about itself", about)}
	}
	return nil
}

// WorkerKinds lists the event kinds a worker may submit.
func WorkerKinds() []Kind {
	return []Kind{KindRunnerStatusUpdated, KindDownloadCompleted, KindDownloadFailed}
}
