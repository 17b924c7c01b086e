package doctor

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Schema fields that tell Kargo versions apart, as "<Kind>.<path>" with
// "[]" for list items. kargoV111Fields appeared in Kargo v1.11.0 (absent
// from v1.10); kargoNewerFields appeared after v1.11.2 (Kargo's main
// branch, Nov 2026).
var (
	kargoV111Fields = []string{
		"Freight.discoveredAt",
		"ProjectConfig.spec.promotionPolicies[].autoRollback",
		"Promotion.spec.origin",
		"Stage.status.autoPromotionHolds",
	}
	kargoNewerFields = []string{
		"ProjectConfig.spec.promotionWindows",
		"Promotion.spec.target",
		"Stage.spec.targets",
	}
)

// SchemaFields returns the field paths a CRD version's schema declares,
// as "<Kind>.<path>" ("[]" marks list items).
func SchemaFields(kind string, s *apiextensionsv1.JSONSchemaProps) map[string]bool {
	out := map[string]bool{}
	var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
	walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
		if s == nil {
			return
		}
		for name := range s.Properties {
			p := s.Properties[name]
			out[path+"."+name] = true
			walk(&p, path+"."+name)
		}
		if s.Items != nil {
			walk(s.Items.Schema, path+"[]")
		}
	}
	walk(s, kind)
	return out
}

// KargoVersion says which Kargo version the installed CRDs' fields match:
// "v1.11.x" (ok), "older than v1.11" or "newer than v1.11" (warn, with the
// telling fields), or "unknown" when the schemas declare none of the fields
// (permissive CRDs).
func KargoVersion(fields map[string]bool) (Status, string) {
	var missing, newer []string
	for _, f := range kargoV111Fields {
		if !fields[f] {
			missing = append(missing, f)
		}
	}
	for _, f := range kargoNewerFields {
		if fields[f] {
			newer = append(newer, f)
		}
	}
	switch {
	case len(missing) == len(kargoV111Fields) && len(newer) == 0:
		return StatusWarn, "version unknown: the CRD schemas declare none of the fields that tell Kargo versions apart"
	case len(newer) > 0:
		return StatusWarn, fmt.Sprintf("newer than v1.11 (has %s); kargo-fleet is tested against v1.11.x", examples(newer))
	case len(missing) > 0:
		return StatusWarn, fmt.Sprintf("older than v1.11 (lacks %s); kargo-fleet needs v1.11.x", examples(missing))
	}
	return StatusOK, "match Kargo v1.11.x"
}

// ServiceRef is an in-cluster Service address.
type ServiceRef struct {
	Namespace, Name string
	Port            int32
}

// ServiceOf reads an in-cluster Service from a URL such as
// http://kargo-fleet-steps.kargo-fleet.svc:9090 (also <name>.<namespace>
// and <name>.<namespace>.svc.cluster.local). false: the URL names no
// in-cluster Service.
func ServiceOf(raw string) (ServiceRef, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return ServiceRef{}, false
	}
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) < 2 || (len(parts) > 2 && parts[2] != "svc") {
		return ServiceRef{}, false
	}
	ref := ServiceRef{Name: parts[0], Namespace: parts[1], Port: 80}
	if u.Scheme == "https" {
		ref.Port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return ServiceRef{}, false
		}
		ref.Port = int32(n)
	}
	return ref, true
}

// LeaseVerdict judges the controller's leader election Lease: someone must
// hold it and have renewed it within its duration.
func LeaseVerdict(holder string, renew *time.Time, duration time.Duration, now time.Time) (Status, string) {
	if holder == "" {
		return StatusFail, "the Lease has no holder: no controller replica leads"
	}
	if renew == nil {
		return StatusFail, fmt.Sprintf("the Lease is held by %s but was never renewed", holder)
	}
	age := now.Sub(*renew).Round(time.Second)
	if duration <= 0 {
		duration = 15 * time.Second
	}
	if age > duration {
		return StatusFail, fmt.Sprintf("the Lease held by %s was last renewed %s ago, more than its %s duration: "+
			"the leader is gone", holder, age, duration)
	}
	return StatusOK, fmt.Sprintf("leader %s renewed the Lease %s ago", holder, age)
}

// AppRef is one "apps" entry of an argocd-update step, resolved for one
// target Stage.
type AppRef struct {
	Namespace string
	Name      string
	Selector  labels.Selector
	// Describe names the entry in messages.
	Describe string
}

// AppMeta is what the checks need of an Argo CD Application.
type AppMeta struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// App is the whole Application, when read (its spec and status).
	App *argocd.Application
}

// templatePattern finds ${{ ... }} expressions.
var templatePattern = regexp.MustCompile(`\$\{\{(.*?)\}\}`)

// ResolveTemplate evaluates the ${{ }} expressions of s over a target
// Stage's variables and ctx.project / ctx.stage, as Kargo would at
// promotion time. false: s uses something only known then (outputs,
// secrets, Freight, ...).
func ResolveTemplate(s string, vars map[string]string, project, stage string) (string, bool) {
	env := map[string]any{
		"ctx":  map[string]any{"project": project, "stage": stage},
		"vars": vars,
	}
	resolved := true
	out := templatePattern.ReplaceAllStringFunc(s, func(m string) string {
		code := strings.TrimSpace(templatePattern.FindStringSubmatch(m)[1])
		v, err := expr.Eval(code, env)
		if err != nil || v == nil {
			resolved = false
			return ""
		}
		switch v.(type) {
		case string, int, int64, float64, bool:
			return fmt.Sprint(v)
		}
		resolved = false
		return ""
	})
	return out, resolved
}

// StageVars evaluates a Stage's spec.vars into plain strings; a var whose
// value is itself an expression is evaluated over the ones before it.
func StageVars(vars []kargo.ExpressionVariable, project, stage string) map[string]string {
	out := make(map[string]string, len(vars))
	for _, v := range vars {
		if val, ok := ResolveTemplate(v.Value, out, project, stage); ok {
			out[v.Name] = val
		}
	}
	return out
}

// argoCDUpdateApp is the part of one "apps" entry of Kargo's argocd-update
// step config that says which Applications the step touches. The rest of
// the entry (sources, desiredRevision, ...) is often only known at
// promotion time (${{ outputs... }}) and does not change which
// Applications are touched, so it is not read.
type argoCDUpdateApp struct {
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Selector  json.RawMessage `json:"selector"`
}

// ArgoCDAppRefs resolves the Applications the argocd-update steps of a
// template name for one target Stage, from each apps[] entry's name,
// namespace and selector only. undeterminable lists the steps whose
// Applications only promotion time can tell.
func ArgoCDAppRefs(steps []kargo.PromotionStep, vars map[string]string, project, stage string) (refs []AppRef, undeterminable []string) {
	for i, step := range steps {
		if step.Uses != "argocd-update" {
			continue
		}
		alias := step.As
		if alias == "" {
			alias = fmt.Sprintf("step-%d", i)
		}
		var cfg struct {
			Apps []argoCDUpdateApp `json:"apps"`
		}
		if step.Config == nil || json.Unmarshal(step.Config.Raw, &cfg) != nil || len(cfg.Apps) == 0 {
			undeterminable = append(undeterminable, alias)
			continue
		}
		stepRefs := make([]AppRef, 0, len(cfg.Apps))
		for _, a := range cfg.Apps {
			ref, ok := resolveApp(a, vars, project, stage)
			if !ok {
				stepRefs = nil
				break
			}
			stepRefs = append(stepRefs, ref)
		}
		if stepRefs == nil {
			undeterminable = append(undeterminable, alias)
			continue
		}
		refs = append(refs, stepRefs...)
	}
	return refs, undeterminable
}

// resolveApp resolves one apps[] entry for a target Stage. false: its name,
// namespace or selector uses something only known at promotion time, or
// names nothing.
func resolveApp(a argoCDUpdateApp, vars map[string]string, project, stage string) (AppRef, bool) {
	name, okName := ResolveTemplate(a.Name, vars, project, stage)
	namespace, okNamespace := ResolveTemplate(a.Namespace, vars, project, stage)
	if !okName || !okNamespace {
		return AppRef{}, false
	}
	ref := AppRef{Namespace: cmp.Or(namespace, kargo.ArgoCDDefaultNamespace), Name: name}
	if len(a.Selector) > 0 && string(a.Selector) != "null" {
		raw, ok := resolveJSON(a.Selector, vars, project, stage)
		var ls metav1.LabelSelector
		if !ok || json.Unmarshal(raw, &ls) != nil {
			return AppRef{}, false
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return AppRef{}, false
		}
		ref.Selector = sel
		ref.Describe = fmt.Sprintf("Applications matching %q in namespace %q", sel.String(), ref.Namespace)
		return ref, true
	}
	if ref.Name == "" {
		return AppRef{}, false
	}
	ref.Describe = fmt.Sprintf("Application %s/%s", ref.Namespace, ref.Name)
	return ref, true
}

// resolveJSON resolves every string of a JSON document (a label selector).
func resolveJSON(raw []byte, vars map[string]string, project, stage string) ([]byte, bool) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, false
	}
	resolved := true
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			s, ok := ResolveTemplate(t, vars, project, stage)
			resolved = resolved && ok
			return s
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k := range t {
				t[k] = walk(t[k])
			}
		}
		return v
	}
	doc = walk(doc)
	out, err := json.Marshal(doc)
	return out, resolved && err == nil
}

// Applications are the Argo CD Applications of one namespace, indexed by
// name.
type Applications struct {
	all    []AppMeta
	byName map[string]int
}

// NewApplications indexes apps.
func NewApplications(apps []AppMeta) *Applications {
	a := &Applications{all: apps, byName: make(map[string]int, len(apps))}
	for i := range apps {
		a.byName[apps[i].Name] = i
	}
	return a
}

// match returns the Applications a reference selects.
func (a *Applications) match(ref AppRef) []AppMeta {
	if a == nil {
		return nil
	}
	if ref.Selector == nil {
		if i, ok := a.byName[ref.Name]; ok {
			return []AppMeta{a.all[i]}
		}
		return nil
	}
	var out []AppMeta
	for _, app := range a.all {
		if ref.Selector.Matches(labels.Set(app.Labels)) {
			out = append(out, app)
		}
	}
	return out
}

// AppProblem is an Application reference that will make a target's
// argocd-update step error.
type AppProblem struct {
	Stage   string
	Ref     string
	Missing bool
	Reason  string
}

// AuthorizeApps applies Kargo v1.11.2's rule to one target Stage's
// Application references: a named Application must exist and authorize the
// Stage; of the Applications a selector matches, at least one must.
// apps holds the Applications of each namespace.
func AuthorizeApps(project, stage string, refs []AppRef, apps map[string]*Applications) []AppProblem {
	var out []AppProblem
	for _, ref := range refs {
		matched := apps[ref.Namespace].match(ref)
		if len(matched) == 0 {
			out = append(out, AppProblem{Stage: stage, Ref: ref.Describe, Missing: true, Reason: "not found"})
			continue
		}
		authorized := slices.ContainsFunc(matched, func(a AppMeta) bool {
			return kargo.AuthorizeStage(a.Annotations, types.NamespacedName{Namespace: ref.Namespace, Name: a.Name}, project, stage) == nil
		})
		reason := refusal(matched[0].Annotations)
		if !authorized {
			out = append(out, AppProblem{Stage: stage, Ref: ref.Describe, Reason: reason})
		}
	}
	return out
}

// refusal says in a few words why an Application's annotations do not
// authorize a Stage (AuthorizeStage already refused it).
func refusal(annotations map[string]string) string {
	value, ok := annotations[kargo.AuthorizedStageAnnotation]
	if !ok {
		return "no " + kargo.AuthorizedStageAnnotation + " annotation"
	}
	if _, err := kargo.AuthorizedStages(value); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("it lists %q", value)
}

// AutoPromotingStages returns the Stages among stages that the ProjectConfig
// auto-promotes, with the index of the policy that does.
func AutoPromotingStages(cfg *kargo.ProjectConfig, stages []metav1.ObjectMeta) ([]string, error) {
	var out []string
	for _, s := range stages {
		p, i, err := cfg.PolicyFor(s)
		if err != nil {
			return nil, err
		}
		if p != nil && p.AutoPromotionEnabled {
			out = append(out, fmt.Sprintf("%s (promotionPolicies[%d])", s.Name, i))
		}
	}
	return out, nil
}

// NeverAllowed returns the names of the plan's targets that the change
// windows never let start (no opening found from now on, e.g. under a deny
// window that never closes), by wave.
func NeverAllowed(p *plan.WavePlan, policy *plan.CompiledPolicy, now time.Time) []string {
	var out []string
	for _, w := range p.Waves {
		for i := range w.Members {
			if _, open := policy.NextAllowed(&w.Members[i], now); !open {
				out = append(out, w.Members[i].Name)
			}
		}
	}
	return out
}

// NeverHalting returns the waves whose failure allowance, and the
// fleet-wide one, are at least their size: every target may fail and the
// wave still passes.
func NeverHalting(p *plan.WavePlan) []string {
	var out []string
	for _, w := range p.Waves {
		n := len(w.Members)
		if p.FleetMaxFailures != nil && *p.FleetMaxFailures < n {
			continue
		}
		if n > 0 && w.MaxFailures >= n {
			out = append(out, fmt.Sprintf("%s (maxFailures %d, %d targets)", w.Name, w.MaxFailures, n))
		}
	}
	return out
}

// Labels the chart puts on every object of a release, by which doctor finds
// an installation.
const (
	// LabelName is the chart name label ("kargo-fleet" unless nameOverride).
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is the Helm release name label.
	LabelInstance = "app.kubernetes.io/instance"
	// ChartName is the chart's name, the LabelName value of its objects.
	ChartName = "kargo-fleet"
)

// Release is one kargo-fleet installation, found by its controller
// Deployment.
type Release struct {
	// Name is the Helm release (the Deployment's LabelInstance).
	Name string
	// Namespace is the release namespace, where the Deployment and the
	// leader election Lease are.
	Namespace string
	// Deployment is the controller Deployment's name.
	Deployment string
}

// String names the release in messages.
func (r Release) String() string {
	return fmt.Sprintf("release %q (Deployment %s/%s)", r.Name, r.Namespace, r.Deployment)
}

// PickRelease chooses the installation to check among the controller
// Deployments found: the one of release want when given, else the only one.
// ok is false when none or several match; msg then says what was found.
func PickRelease(found []Release, want string) (rel Release, ok bool, msg string) {
	var match []Release
	for _, r := range found {
		if want == "" || r.Name == want {
			match = append(match, r)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], true, ""
	case len(match) == 0 && want != "":
		return Release{}, false, fmt.Sprintf("no kargo-fleet Deployment of release %q (label %s=%s)", want, LabelInstance, want)
	case len(match) == 0:
		return Release{}, false, fmt.Sprintf("no kargo-fleet Deployment (label %s=%s)", LabelName, ChartName)
	}
	names := make([]string, 0, len(match))
	for _, r := range match {
		names = append(names, r.String())
	}
	slices.Sort(names)
	return Release{}, false, fmt.Sprintf("%d kargo-fleet releases: %s", len(match), examples(names))
}

// WebhookEnableFix is the fix for a release without its webhook
// configuration: the chart's default renders it.
func WebhookEnableFix(rel Release) string {
	return fmt.Sprintf("install the webhook with the chart: helm upgrade %s charts/kargo-fleet -n %s --reset-then-reuse-values "+
		"--set webhook.enabled=true (webhook.certificates=auto, the default, needs nothing else)", rel.Name, rel.Namespace)
}

// CABundleFix is the fix for a webhook without a caBundle: who writes it
// depends on the chart's webhook.certificates mode, which the
// configuration's cert-manager annotation tells (injectFrom, empty without).
func CABundleFix(rel Release, injectFrom string) string {
	if injectFrom != "" {
		return fmt.Sprintf("cert-manager injects the CA of Certificate %s: check that it is Ready and that cert-manager's "+
			"cainjector runs, or let the controller make the certificate: helm upgrade %s charts/kargo-fleet -n %s "+
			"--reset-then-reuse-values --set webhook.certificates=generated", injectFrom, rel.Name, rel.Namespace)
	}
	return fmt.Sprintf("in the chart's generated mode the controller writes the CA at start: check its log "+
		"(kubectl -n %s logs deploy/%s); with your own certificate Secret, give the chart its CA: helm upgrade %s "+
		"charts/kargo-fleet -n %s --reset-then-reuse-values --set webhook.caBundle=<base64 PEM>", rel.Namespace, rel.Deployment,
		rel.Name, rel.Namespace)
}

// Clusters are the destination clusters Argo CD knows in one namespace:
// the server URLs and names of its cluster Secrets.
type Clusters struct {
	Servers, Names map[string]bool
	// ServerOf maps a cluster Secret's name to its server URL.
	ServerOf map[string]string
}

// Server returns the server URL of a destination a cluster Secret
// registers; "" for Argo CD's own cluster or one it does not know.
func (c Clusters) Server(d argocd.Destination) string {
	switch {
	case d.Server == argocd.InClusterServer || (d.Server == "" && d.Name == argocd.InClusterName):
		return ""
	case d.Server != "":
		if c.Servers[d.Server] {
			return d.Server
		}
		return ""
	}
	return c.ServerOf[d.Name]
}

// Knows reports whether d names a cluster Argo CD knows: its own
// (in-cluster), or one a cluster Secret registers.
func (c Clusters) Knows(d argocd.Destination) bool {
	switch {
	case d.Server == argocd.InClusterServer || (d.Server == "" && d.Name == argocd.InClusterName):
		return true
	case d.Server != "":
		return c.Servers[d.Server]
	}
	return c.Names[d.Name]
}

// DestinationProblems returns, for the Applications of one target Stage
// (authorized for it), what keeps Argo CD from deploying each: its
// AppProject missing or refusing its destination or sources, its
// destination cluster not registered, or a condition saying Argo CD cannot
// reach or compare it. projects maps "<namespace>/<name>" to the
// AppProjects found; nil when the cluster serves no AppProject kind (not
// checked).
func DestinationProblems(namespace string, apps []AppMeta, projects map[string]*argocd.AppProject, clusters Clusters) []string {
	var out []string
	for _, m := range apps {
		app := m.App
		if app == nil {
			continue
		}
		ref := namespace + "/" + m.Name
		if projects != nil {
			proj := projects[namespace+"/"+app.ProjectName()]
			switch {
			case proj == nil:
				out = append(out, fmt.Sprintf("%s: AppProject %s not found", ref, app.ProjectName()))
			case proj.Permits(app) != nil:
				out = append(out, fmt.Sprintf("%s: %v", ref, proj.Permits(app)))
			}
		}
		// An Application without a destination is refused by Argo CD
		// itself (InvalidSpecError, below).
		if d := app.Spec.Destination; (d.Server != "" || d.Name != "") && !clusters.Knows(d) {
			out = append(out, fmt.Sprintf("%s: no cluster Secret in %s registers its destination %s", ref, namespace,
				cmp.Or(app.Spec.Destination.Server, app.Spec.Destination.Name)))
		}
		if p := app.ComparisonProblem(); p != "" {
			out = append(out, fmt.Sprintf("%s: %s", ref, p))
		}
	}
	return out
}
