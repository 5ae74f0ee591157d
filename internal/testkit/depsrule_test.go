package testkit

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/skulk/skulk"

// imports returns, for every package directory under root, the imports of
// its non-test Go files.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := module + "/" + filepath.ToSlash(rel)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[pkg] = append(out[pkg], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isStd(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

// allowedImports lists, for packages whose every non-standard import is
// fixed, the import paths (or path prefixes ending in "/") they may use.
// Packages of the module under internal/ are named without the module path.
var allowedImports = map[string][]string{
	"internal/platform/ids":      {},
	"internal/serving/request":   {"internal/platform/ids", "internal/platform/fault"},
	"internal/observe/trace":     {},
	"internal/control/event":     {"github.com/fxamacker/cbor/v2", "internal/platform/ids"},
	"internal/control/state":     {"github.com/fxamacker/cbor/v2", "internal/control/event", "internal/platform/ids"},
	"internal/control/placement": {},
	"internal/serving/connlimit": {},
	// consensus knows Raft and the log's bytes, not what the log holds.
	"internal/control/consensus":  {"go.etcd.io/raft/v3", "google.golang.org/protobuf/", "github.com/fxamacker/cbor/v2", "internal/control/eventlog", "internal/platform/ids"},
	"internal/control/eventlog":   {"github.com/klauspost/compress/", "golang.org/x/sys/", "internal/platform/vfs"},
	"internal/engine/tensor":      {"golang.org/x/sys/"},
	"internal/engine/gguf":        {"golang.org/x/sys/", "internal/engine/tensor"},
	"internal/engine/tokenizer":   {"internal/engine/gguf", "internal/engine/tensor"},
	"internal/engine/sample":      {},
	"internal/engine/sequence":    {"internal/engine/sample"},
	"internal/engine/output":      {},
	"internal/engine/grammar":     {},
	"internal/engine/chat":        {"github.com/ardanlabs/jinja"},
	"internal/engine/synth":       {"internal/engine/gguf", "internal/engine/tensor", "golang.org/x/sys/"},
	"internal/control/membership": {"github.com/hashicorp/memberlist", "github.com/hashicorp/mdns", "github.com/hashicorp/go-sockaddr", "internal/platform/ids", "internal/platform/transport/clusterkey"},
	"internal/platform/transport": {"github.com/quic-go/quic-go", "internal/platform/ids", "internal/platform/transport/clusterkey"},
	"internal/serving/pipeline":   {"internal/engine/gguf", "internal/engine/model", "internal/engine/sample", "internal/engine/sequence"},
	// link carries pipeline.Link between ranks and reports its links as
	// telemetry; pipeline never imports it.
	"internal/serving/link": {"internal/serving/pipeline", "internal/control/event", "internal/control/membership", "internal/control/state",
		"internal/observe/telemetry", "internal/platform/ids"},
	// metrics knows Prometheus, not the domain: the node hands it plain values.
	"internal/observe/metrics": {"github.com/prometheus/client_golang/"},
	// The home's files are the node's own; the cluster key's format is
	// clusterkey's.
	"internal/platform/homedir": {"golang.org/x/sys/", "internal/platform/config", "internal/platform/ids", "internal/platform/transport/clusterkey"},
}

// layers orders the planes of internal/: a package imports only its own
// layer and those below (platform and observe are the bottom; observe
// imports only platform). node and cmd are above them all.
var layers = []string{"platform", "observe", "engine", "control", "models", "serving", "node"}

// layerOf is the index in layers of an internal package, -1 for others.
func layerOf(p string) int {
	for i, l := range layers {
		if under(p, module+"/internal/"+l) {
			return i
		}
	}
	return -1
}

// TestEveryPackageInALayer keeps internal/ grouped: a package directly
// under it escapes the layer order unless it is one of the layers.
func TestEveryPackageInALayer(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range imports(t, root) {
		if under(pkg, module+"/internal") && layerOf(pkg) < 0 && !under(pkg, module+"/internal/testkit") {
			t.Errorf("%s is in none of the layers %v: put it in one", pkg, layers)
		}
	}
}

// stricterPure are standard packages placement must not import on top of
// the pure set (it must not reach for unsafe tricks or the runtime either).
var stricterPure = map[string]bool{"unsafe": true, "runtime": true}

func allowedImport(list []string, im string) bool {
	for _, a := range list {
		if strings.HasPrefix(a, "internal/") {
			a = module + "/" + a
		}
		if im == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(im, a)) || strings.HasPrefix(im, a+"/") {
			return true
		}
	}
	return false
}

// TestDependencyRules enforces the package rules docs/architecture.md lists.
func TestDependencyRules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	all := imports(t, root)
	if _, ok := all[module+"/internal/engine/model"]; !ok {
		t.Fatalf("the import scan found no engine packages under %s", root)
	}
	for pkg := range allowedImports {
		if _, ok := all[module+"/"+pkg]; !ok {
			t.Errorf("the rule table names %s, which the scan did not find", pkg)
		}
	}
	in := func(p string) string { return module + "/internal/" + p }
	forbiddenPure := map[string]bool{"os": true, "net": true, "time": true, "sync": true, "log": true, "math/rand": true, "math/rand/v2": true, "log/slog": true}
	for pkg, ims := range all {
		for _, im := range ims {
			// engine/** imports only engine/**, the standard library and x/sys
			// (the chat templates also use the Jinja library).
			if under(pkg, in("engine")) && !isStd(im) && !under(im, in("engine")) && !under(im, "golang.org/x/sys") &&
				!(under(pkg, in("engine/chat")) && im == "github.com/ardanlabs/jinja") {
				t.Errorf("%s imports %s: the engine may import only itself, the standard library and golang.org/x/sys", pkg, im)
			}
			for _, pure := range []string{"control/state", "control/placement"} {
				if under(pkg, in(pure)) && forbiddenPure[im] {
					t.Errorf("%s imports %s: pure packages take time, randomness and I/O as inputs", pkg, im)
				}
			}
			if under(pkg, in("control/eventlog")) && (under(im, in("control/event")) || under(im, in("control/state"))) {
				t.Errorf("%s imports %s: the event log stores bytes", pkg, im)
			}
			for _, adapter := range []string{"control/membership", "platform/transport"} {
				if under(pkg, in(adapter)) {
					for _, svc := range []string{"control/master", "control/forward", "serving/worker", "serving/gateway", "control/plane", "observe/telemetry", "node", "serving/api"} {
						if under(im, in(svc)) {
							t.Errorf("%s imports %s: I/O adapters import no domain service", pkg, im)
						}
					}
				}
			}
			// The services behind the HTTP API implement its interfaces with
			// the vocabulary of admin and infer; the node wires them in.
			for _, svc := range []string{"serving/gateway", "models/modeladmin"} {
				if under(pkg, in(svc)) && under(im, in("serving/api")) {
					t.Errorf("%s imports %s: the services behind the HTTP API do not import it; the node wires them together", pkg, im)
				}
			}
			// The request path routes from the replicated State and hands
			// requests to the node that runs them: it does not reach for the
			// control plane's single writer, nor the plane that elects it.
			for _, path := range []string{"serving/gateway", "serving/api", "serving/worker"} {
				if under(pkg, in(path)) && (under(im, in("control/master")) || under(im, in("control/plane"))) {
					t.Errorf("%s imports %s: the request path does not import the control plane's writer", pkg, im)
				}
			}
			if under(pkg, in("serving/api")) && pkg != in("serving/api") && im == "net/http" {
				t.Errorf("%s imports net/http: wire-format adapters are pure translators", pkg)
			}
			if (under(im, in("node")) || under(im, module+"/cmd")) && !under(pkg, module+"/cmd") {
				t.Errorf("%s imports %s: nothing imports node or cmd", pkg, im)
			}
			// The layer order: platform and observe < engine < control <
			// models < serving < node. observe imports only platform (the
			// node hands it plain values), platform nothing above itself.
			if pl, il := layerOf(pkg), layerOf(im); pl >= 0 && il >= 0 {
				bottom := func(l int) int { return max(l, 1) } // platform and observe share the bottom
				switch {
				case pl <= 1 && il != 0:
					t.Errorf("%s imports %s: %s imports only platform packages of ours", pkg, im, layers[pl])
				case bottom(il) > bottom(pl):
					t.Errorf("%s imports %s: %s is a layer above %s", pkg, im, layers[il], layers[pl])
				}
			}
			if under(im, in("testkit")) {
				t.Errorf("%s imports testkit outside a test", pkg)
			}
			if list, ok := allowedImports[strings.TrimPrefix(pkg, module+"/")]; ok && !isStd(im) && !allowedImport(list, im) {
				t.Errorf("%s imports %s; it may import only the standard library and %v", pkg, im, list)
			}
			if pkg == in("control/placement") && stricterPure[im] {
				t.Errorf("%s imports %s: the planner is plain arithmetic", pkg, im)
			}
		}
	}
}
