package dashboard

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// templates are the page templates; "summary" is also what every update
// pushes, so a live page and a reloaded one look the same.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"fleetPath":   link.FleetStagePath,
	"projectPath": link.ProjectPath,
	"lower":       strings.ToLower,
	"pct":         func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"since":       since,
	"add":         func(a, b int) int { return a + b },
}).ParseFS(templateFiles, "templates/*.html"))

// staticFS holds the page's script and style sheet.
func staticFS() fs.FS {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	return sub
}

// since formats a time as UTC, for people.
func since(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.DateTime) + " UTC"
}
