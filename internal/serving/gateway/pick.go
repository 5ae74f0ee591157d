package gateway

import (
	"sort"

	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// pickInstance chooses the instance that serves a request for model: the
// ready instance with the least load (this node's requests in flight on
// it; ties: the order ReadyInstancesForModel gives). Its refusals say what
// to do: place the model, or retry while it loads.
func pickInstance(s state.State, model ids.ModelID, load map[ids.InstanceID]int) (ids.InstanceID, error) {
	ready := s.ReadyInstancesForModel(model)
	if len(ready) == 0 {
		for _, inst := range s.Instances {
			if inst.Model == model && inst.Status == state.InstancePending {
				return "", fault.Errorf(fault.ClassUnavailable, "model %s is still loading; retry in a moment", model)
			}
		}
		return "", fault.Errorf(fault.ClassNotFound, "model %s has no running instance; place it first with `skulk place %s` or POST /place_instance", model, model)
	}
	sort.SliceStable(ready, func(i, j int) bool { return load[ready[i]] < load[ready[j]] })
	return ready[0], nil
}
