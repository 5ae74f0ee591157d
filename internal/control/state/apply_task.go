package state

import (
	"fmt"
	"slices"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

func taskCreated(s State, e event.TaskCreated) (State, error) {
	if _, ok := s.Tasks[e.Task]; ok {
		return s, fmt.Errorf("task %s: %w", e.Task, ErrExists)
	}
	inst, ok := s.Instances[e.Instance]
	if !ok {
		return s, fmt.Errorf("task %s on instance %s: %w", e.Task, e.Instance, ErrUnknownInstance)
	}
	if inst.Model != e.Model {
		return s, fmt.Errorf("task %s asks for model %s, instance %s serves %s: %w", e.Task, e.Model, e.Instance, inst.Model, ErrConflict)
	}
	if inst.Status != InstanceReady {
		return s, fmt.Errorf("task %s on instance %s, which is %s: %w", e.Task, e.Instance, inst.Status, ErrConflict)
	}
	if _, ok := s.Nodes[e.Owner]; !ok {
		return s, fmt.Errorf("task %s owner %s: %w", e.Task, e.Owner, ErrUnknownNode)
	}
	s.Tasks = with(s.Tasks, e.Task, Task{
		Command: e.Command, Kind: e.TaskKind, Model: e.Model, Instance: e.Instance, Owner: e.Owner,
		Payload: e.Payload, CreatedAtUnixMs: e.CreatedAtUnixMs, Status: TaskPending,
	})
	return s, nil
}

func taskAcknowledged(s State, e event.TaskAcknowledged) (State, error) {
	t, err := taskFrom(s, e.Task, e.Node, false)
	if err != nil {
		return s, err
	}
	if t.Status == TaskPending {
		t.Status = TaskAcknowledged
		s.Tasks = with(s.Tasks, e.Task, t)
	}
	return s, nil
}

func taskCancelled(s State, e event.TaskCancelled) (State, error) {
	t, ok := s.Tasks[e.Task]
	if !ok {
		return s, fmt.Errorf("task %s: %w", e.Task, ErrUnknownTask)
	}
	t.Status = TaskCancelling
	s.Tasks = with(s.Tasks, e.Task, t)
	return s, nil
}

func taskFinished(s State, e event.TaskFinished) (State, error) {
	if _, err := taskFrom(s, e.Task, e.Node, true); err != nil {
		return s, err
	}
	s.Tasks = without(s.Tasks, e.Task)
	return s, nil
}

// taskFrom returns the task if node may report on it: a node holding a rank
// of its instance or, when masterMay, the master (which fails tasks whose
// instance is gone).
func taskFrom(s State, id ids.TaskID, node ids.NodeID, masterMay bool) (Task, error) {
	t, ok := s.Tasks[id]
	if !ok {
		return t, fmt.Errorf("task %s: %w", id, ErrUnknownTask)
	}
	if masterMay && node == s.Master {
		return t, nil
	}
	inst := s.Instances[t.Instance]
	if !slices.ContainsFunc(inst.Placement, func(sh event.Shard) bool { return sh.Node == node }) {
		return t, fmt.Errorf("node %s holds no rank of task %s's instance %s: %w", node, id, t.Instance, ErrConflict)
	}
	return t, nil
}
