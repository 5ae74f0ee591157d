package event

import (
	"errors"
	"slices"
	"testing"
)

func TestAdmit(t *testing.T) {
	worker := Source{Role: RoleWorker, Node: "node-b"}
	master := Source{Role: RoleMaster, Node: "node-a"}
	for _, name := range sortedKeys(sampleEvents()) {
		ev := sampleEvents()[name]
		t.Run(name, func(t *testing.T) {
			if err := Admit(master, ev); err != nil {
				t.Fatalf("master: %v", err)
			}
			err := Admit(worker, ev)
			workerKind := slices.Contains(WorkerKinds(), ev.Kind())
			switch {
			case !workerKind && !errors.Is(err, ErrNotAdmitted):
				t.Fatalf("worker submitted master-only %s: got %v, want ErrNotAdmitted", ev.Kind(), err)
			case workerKind && errors.Is(err, ErrNotAdmitted):
				// Samples about node-a must be refused from node-b and
				// admitted from node-a.
				if err2 := Admit(Source{Role: RoleWorker, Node: "node-a"}, ev); err2 != nil {
					t.Fatalf("worker event refused from both nodes: %v, %v", err, err2)
				}
			case workerKind && err != nil:
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestAdmitTable(t *testing.T) {
	tests := []struct {
		name   string
		source Source
		ev     Event
		want   error
	}{
		{"worker_own_runner", Source{RoleWorker, "n1"}, RunnerStatusUpdated{Runner: "r", Instance: "i", Node: "n1", Status: RunnerReady}, nil},
		{"worker_foreign_runner", Source{RoleWorker, "n1"}, RunnerStatusUpdated{Runner: "r", Instance: "i", Node: "n2", Status: RunnerReady}, ErrNotAdmitted},
		{"worker_own_download", Source{RoleWorker, "n1"}, DownloadCompleted{Node: "n1", Model: "m"}, nil},
		{"worker_foreign_download", Source{RoleWorker, "n1"}, DownloadFailed{Node: "n2", Model: "m", Reason: "x"}, ErrNotAdmitted},
		{"worker_retired_task", Source{RoleWorker, "n1"}, RetiredTask{Retired: KindTaskFinished, Body: []byte{0xa0}}, ErrNotAdmitted},
		{"worker_creates_instance", Source{RoleWorker, "a"}, sampleEvents()["instance_created"], ErrNotAdmitted},
		{"worker_elects_itself", Source{RoleWorker, "n1"}, MasterElected{Node: "n1", Term: 9}, ErrNotAdmitted},
		{"worker_download_pending", Source{RoleWorker, "n1"}, DownloadPending{Node: "n1", Model: "m"}, ErrNotAdmitted},
		// A card enters the catalog only as the master's decision (the
		// AddModel command); a worker says only that it holds the bytes.
		{"worker_adds_a_card", Source{RoleWorker, "n1"}, ModelAdded{Card: sampleCard()}, ErrNotAdmitted},
		{"worker_removes_a_card", Source{RoleWorker, "n1"}, ModelRemoved{Model: "m"}, ErrNotAdmitted},
		{"worker_holds_foreign_bytes", Source{RoleWorker, "n1"}, DownloadCompleted{Node: "n2", Model: "my-model"}, ErrNotAdmitted},
		{"unknown_role", Source{Role: 0, Node: "n1"}, DownloadCompleted{Node: "n1", Model: "m"}, ErrNotAdmitted},
		{"nil_event", Source{RoleMaster, "n1"}, nil, ErrNotAdmitted},
		{"invalid_event", Source{RoleMaster, "n1"}, NodeJoined{Node: ""}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Admit(tt.source, tt.ev)
			if tt.want == nil && err != nil {
				t.Fatalf("got %v, want admitted", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}
