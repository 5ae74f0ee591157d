package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is the page's policy: everything comes from the
// node itself, nothing runs or loads from anywhere else, and the page
// cannot be framed. Styles set from script (element.style) are CSSOM, which
// style-src 'self' still allows; no inline <style> or style="" is used.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Assets serves the page at / and the built files under /assets/ (and the
// few files next to index.html). They hold no data, so they need no key:
// the page asks for one when the node's API does.
func Assets() http.Handler {
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		p := path.Clean("/" + r.URL.Path)
		if p == "/" || p == "/index.html" {
			// The page names the hashed assets of this build: never reuse
			// an old one.
			h.Set("Cache-Control", "no-cache")
			b, err := fs.ReadFile(root, "index.html")
			if err != nil {
				http.Error(w, "the dashboard was built without index.html", http.StatusInternalServerError)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b)
			return
		}
		if st, err := fs.Stat(root, strings.TrimPrefix(p, "/")); err != nil || st.IsDir() {
			http.NotFound(w, r) // no directory listings
			return
		}
		if strings.HasPrefix(p, "/assets/") {
			// Vite names assets by their content's hash.
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}
