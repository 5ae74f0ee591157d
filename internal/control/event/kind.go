package event

// Kind is the type tag of a Command or Event on the wire. Kinds are never
// renamed or reused.
type Kind string

// Command kinds.
const (
	KindPlaceInstance           Kind = "PlaceInstance"
	KindCreateInstance          Kind = "CreateInstance"
	KindDeleteInstance          Kind = "DeleteInstance"
	KindSetTracingEnabled       Kind = "SetTracingEnabled"
	KindRefuseInstancePlacement Kind = "RefuseInstancePlacement"
	KindFailInstance            Kind = "FailInstance"
)

// Event kinds.
const (
	KindInstanceCreated     Kind = "InstanceCreated"
	KindInstanceDeleted     Kind = "InstanceDeleted"
	KindInstanceFailed      Kind = "InstanceFailed"
	KindRunnerStatusUpdated Kind = "RunnerStatusUpdated"
	KindNodeJoined          Kind = "NodeJoined"
	KindNodeLeft            Kind = "NodeLeft"
	KindDownloadPending     Kind = "DownloadPending"
	KindDownloadCompleted   Kind = "DownloadCompleted"
	KindDownloadFailed      Kind = "DownloadFailed"
	KindTracingSet          Kind = "TracingSet"
	KindMasterElected       Kind = "MasterElected"
)

// CommandKinds lists every command kind, in declaration order.
func CommandKinds() []Kind {
	return []Kind{
		KindPlaceInstance, KindCreateInstance, KindDeleteInstance, KindSetTracingEnabled,
		KindRefuseInstancePlacement, KindFailInstance, KindAddModel, KindRemoveModel,
		KindAddAPIKey, KindRemoveAPIKey,
	}
}

// EventKinds lists every event kind a master may append, in declaration
// order; RetiredKinds lists those only old logs hold.
func EventKinds() []Kind {
	return []Kind{
		KindInstanceCreated, KindInstanceDeleted, KindInstanceFailed, KindRunnerStatusUpdated,
		KindNodeJoined, KindNodeLeft, KindDownloadPending, KindDownloadCompleted,
		KindDownloadFailed, KindTracingSet, KindMasterElected, KindAPIKeysSet,
		KindModelAdded, KindModelRemoved, KindAPIKeyAdded, KindAPIKeyRemoved,
	}
}
