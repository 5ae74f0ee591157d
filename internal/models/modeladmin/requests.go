package modeladmin

// The bodies of the catalog routes, as the HTTP API hands them to the
// Service (defined here so that it implements the API's interface without
// importing it).

// AddModelRequest is the body of POST /models/add.
type AddModelRequest struct {
	Ref string `json:"ref"`          // hf:OWNER/REPO[/FILE.gguf][@REVISION]
	ID  string `json:"id,omitempty"` // the model id; "" derives one from the file name
}

// ImportModelRequest is the body of POST /models/import.
type ImportModelRequest struct {
	Path string `json:"path"`         // an absolute path on the node's machine
	ID   string `json:"id,omitempty"` // the model id; "" derives one from the file name
	// FromLoopback says the request came from a loopback address (a client
	// on the node's machine), which may read under more directories. The
	// handler sets it from the connection; no body can.
	FromLoopback bool `json:"-"`
}
