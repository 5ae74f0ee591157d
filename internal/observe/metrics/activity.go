package metrics

import "fmt"

// Activity is what the dashboard's Activity panel shows of the node's
// work, read from the same registry GET /metrics serves, so the two never
// disagree.
type Activity struct {
	// GeneratedTokens is skulk_generated_tokens_total summed over models.
	GeneratedTokens float64
	// InFlight is skulk_requests_in_flight by instance id.
	InFlight map[string]float64
}

// Activity gathers the registry once and picks the activity's series.
func (m *Metrics) Activity() (Activity, error) {
	fams, err := m.reg.Gather()
	a := Activity{InFlight: map[string]float64{}}
	for _, f := range fams {
		switch f.GetName() {
		case Namespace + "_generated_tokens_total":
			for _, s := range f.GetMetric() {
				a.GeneratedTokens += s.GetCounter().GetValue()
			}
		case Namespace + "_requests_in_flight":
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "instance_id" {
						a.InFlight[l.GetValue()] += s.GetGauge().GetValue()
					}
				}
			}
		}
	}
	if err != nil {
		// Gather returns what it could read along with the error.
		return a, fmt.Errorf("metrics: gather: %w", err)
	}
	return a, nil
}
