package metrics

import "testing"

// TestActivity: the dashboard's activity is what the registry holds: the
// generated tokens summed over models, the requests in flight by instance.
func TestActivity(t *testing.T) {
	m := New(Build{Version: "v", Commit: "c"})
	m.Tokens("a", 5, 7)
	m.Tokens("b", 1, 3)
	m.Tokens("a", 0, 2)
	m.Watch(Readings{Instances: func() []Instance {
		return []Instance{{ID: "i1", Model: "a", InFlight: 2}, {ID: "i2", Model: "b", InFlight: 0}}
	}})
	a, err := m.Activity()
	if err != nil {
		t.Fatal(err)
	}
	if a.GeneratedTokens != 12 || a.InFlight["i1"] != 2 || a.InFlight["i2"] != 0 || len(a.InFlight) != 2 {
		t.Fatalf("activity %+v", a)
	}
}
