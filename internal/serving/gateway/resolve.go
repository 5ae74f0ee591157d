package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// maxCandidates bounds the instances an ambiguous prefix's refusal names.
const maxCandidates = 8

// ResolveInstances turns what a client named into instance ids, as every
// route that takes an instance does: an instance's id; else a model with
// instances (every instance of it, as 'ollama stop MODEL'); else a unique
// prefix of an instance's id. An ambiguous prefix is refused (409) naming
// the candidates, and a name that matches nothing (404) says where the
// instances are listed.
func ResolveInstances(st state.State, ref string) ([]ids.InstanceID, error) {
	if ref == "" {
		return nil, fault.ParamErrorf("id", "name an instance: its id, a unique prefix of it, or a model (GET /state lists the instances)")
	}
	if _, ok := st.Instances[ids.InstanceID(ref)]; ok {
		return []ids.InstanceID{ids.InstanceID(ref)}, nil
	}
	var ofModel, prefixed []ids.InstanceID
	for id, in := range st.Instances {
		if string(in.Model) == ref {
			ofModel = append(ofModel, id)
		}
		if strings.HasPrefix(string(id), ref) {
			prefixed = append(prefixed, id)
		}
	}
	slices.Sort(ofModel)
	slices.Sort(prefixed)
	switch {
	case len(ofModel) > 0:
		return ofModel, nil
	case len(prefixed) == 1:
		return prefixed, nil
	case len(prefixed) > 1:
		var names []string
		for _, id := range prefixed[:min(len(prefixed), maxCandidates)] {
			names = append(names, fmt.Sprintf("%s (%s)", id, st.Instances[id].Model))
		}
		if len(prefixed) > maxCandidates {
			names = append(names, fmt.Sprintf("and %d more", len(prefixed)-maxCandidates))
		}
		return nil, fault.Errorf(fault.ClassConflict, "%s is the start of %d instances' ids: %s; give more of the id, or the model to stop every instance of it",
			fault.Quote(ref), len(prefixed), strings.Join(names, ", "))
	}
	return nil, fault.Errorf(fault.ClassNotFound, "no instance %s: name an instance by its id, a unique prefix of it, or its model (GET /state lists the instances)", fault.Quote(ref))
}

// DeleteInstances tears down what ref names (ResolveInstances) and returns
// the instances it tore down.
func (g *Gateway) DeleteInstances(ctx context.Context, ref string) ([]ids.InstanceID, error) {
	st, err := g.cfg.Master.State(ctx)
	if err != nil {
		return nil, err
	}
	targets, err := ResolveInstances(st, ref)
	if err != nil {
		return nil, err
	}
	var done []ids.InstanceID
	for _, id := range targets {
		err := g.DeleteInstance(ctx, id)
		switch {
		case err == nil, len(targets) > 1 && fault.ClassOf(err) == fault.ClassNotFound:
			// (One of a model's instances gone since the State was read is
			// stopped all the same.)
			done = append(done, id)
		case len(done) > 0:
			return done, fault.Errorf(fault.ClassOf(err), "stopped %d of the %d instances of %s, then %s: %v", len(done), len(targets), fault.Quote(ref), id, err)
		default:
			return nil, err
		}
	}
	return done, nil
}

// ResolveNode turns what a client named into a node id, as every route
// that takes a node does: a node's id; else its name (unique among the
// live nodes); else a unique prefix of a node's id. An ambiguous name or
// prefix is refused (409) naming the candidates; one that matches nothing
// (404) says where the nodes are listed. known are the State's nodes,
// live the membership's (with their names).
func ResolveNode(known []ids.NodeID, live []placement.Node, ref string) (ids.NodeID, error) {
	if ref == "" {
		return "", fault.ParamErrorf("node", "name a node: its id, a unique prefix of it, or its name (skulk nodes lists them)")
	}
	all := map[ids.NodeID]string{}
	for _, id := range known {
		all[id] = ""
	}
	for _, n := range live {
		all[ids.NodeID(n.ID)] = n.Name
	}
	if _, ok := all[ids.NodeID(ref)]; ok {
		return ids.NodeID(ref), nil
	}
	var named, prefixed []ids.NodeID
	for id, name := range all {
		if name == ref {
			named = append(named, id)
		}
		if strings.HasPrefix(string(id), ref) {
			prefixed = append(prefixed, id)
		}
	}
	slices.Sort(named)
	slices.Sort(prefixed)
	pick := prefixed
	if len(named) > 0 {
		pick = named
	}
	switch {
	case len(pick) == 1:
		return pick[0], nil
	case len(pick) > 1:
		var names []string
		for _, id := range pick[:min(len(pick), maxCandidates)] {
			names = append(names, fmt.Sprintf("%s (%s)", id, orUnnamed(all[id])))
		}
		if len(pick) > maxCandidates {
			names = append(names, fmt.Sprintf("and %d more", len(pick)-maxCandidates))
		}
		return "", fault.Errorf(fault.ClassConflict, "%s names %d nodes: %s; give more of the id", fault.Quote(ref), len(pick), strings.Join(names, ", "))
	}
	return "", fault.Errorf(fault.ClassNotFound, "no node %s: name a node by its id, a unique prefix of it, or its name (skulk nodes lists them)", fault.Quote(ref))
}

func orUnnamed(name string) string {
	if name == "" {
		return "no name known"
	}
	return name
}
