package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// DefaultCoalesce is the shortest time between two pushes to one page.
const DefaultCoalesce = 500 * time.Millisecond

// keepAlive is how often an idle event stream sends a comment, so proxies
// keep it open.
const keepAlive = 20 * time.Second

// Options configure a Server.
type Options struct {
	// Config reaches the API server with the viewer's own credentials. With
	// it, each viewed Project gets an informer cache whose events push
	// updates to open pages.
	Config *rest.Config
	// Reader, when Config is nil, is read directly and pages are not live
	// (tests, page-weight measurements).
	Reader client.Reader
	// Scheme knows kargo-fleet's kinds, Kargo's and the core ones.
	Scheme *runtime.Scheme
	// Namespaces are the Projects served; empty serves every namespace with
	// a FleetStage the viewer may list. When set, it is a boundary: any
	// other Project's pages and data answer 404.
	Namespaces []string
	// AllowedHosts are Host header values answered besides the listen
	// address and localhost: "host:port", or a host on any port.
	AllowedHosts []string
	// MaxStreams is how many event streams are served at once (default
	// DefaultMaxStreams); beyond it, a new page is answered 503.
	MaxStreams int
	// KargoURL is the Kargo UI's base URL: target details link to it.
	KargoURL string
	// Coalesce is the shortest time between two pushes to one page
	// (default DefaultCoalesce).
	Coalesce time.Duration
	// Clock tells the time (default: the real clock).
	Clock clock.Clock
	// Log receives the server's logs.
	Log logr.Logger
}

// Server serves the dashboard. It only reads: every handler answers GET
// and HEAD, and nothing in it writes to the API server.
type Server struct {
	o      Options
	caches *caches
	// direct reads what no informer holds (snapshot ConfigMaps, the list
	// of Projects), or everything when there is no Config.
	direct client.Reader
	static map[string]*namespaceCache
	mu     sync.Mutex
	plans  map[types.UID]*plan.WavePlan
	// labels caches each FleetStage's inventory labels for
	// inventoryRefresh: the inventory is not watched, and a page update
	// must not list it every time.
	labels map[types.UID]inventoryLabels
	// streams bounds the open event streams.
	streams streamSlots
}

// inventoryRefresh is how long a FleetStage's inventory labels are reused
// before they are read again.
const inventoryRefresh = 30 * time.Second

// inventoryLabels are the labels of a FleetStage's targets by ID, as its
// inventory sources listed them at readAt for generation.
type inventoryLabels struct {
	byID       map[string]map[string]string
	generation int64
	readAt     time.Time
}

// New returns a Server; its informers stop when ctx is done.
func New(ctx context.Context, o Options) (*Server, error) {
	o.Coalesce = cmp.Or(o.Coalesce, DefaultCoalesce)
	o.MaxStreams = cmp.Or(o.MaxStreams, DefaultMaxStreams)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Scheme == nil {
		return nil, errors.New("the dashboard needs a scheme")
	}
	s := &Server{o: o, plans: map[types.UID]*plan.WavePlan{}, static: map[string]*namespaceCache{},
		labels: map[types.UID]inventoryLabels{}, streams: make(streamSlots, o.MaxStreams)}
	switch {
	case o.Config != nil:
		c, err := client.New(o.Config, client.Options{Scheme: o.Scheme})
		if err != nil {
			return nil, fmt.Errorf("error creating a client for %s: %w", o.Config.Host, err)
		}
		s.direct = c
		s.caches = &caches{cfg: o.Config, scheme: o.Scheme, log: o.Log, ctx: ctx, m: map[string]*namespaceCache{}}
	case o.Reader != nil:
		s.direct = o.Reader
	default:
		return nil, errors.New("the dashboard needs a rest config or a reader")
	}
	return s, nil
}

// notServedError is a Project outside Options.Namespaces.
type notServedError struct {
	namespace string
	served    []string
}

func (e notServedError) Error() string {
	return fmt.Sprintf("Project %q is not served: this dashboard shows only %s", e.namespace, quoteList(e.served))
}

// served reports whether the dashboard shows a Project.
func (s *Server) served(ns string) bool {
	return len(s.o.Namespaces) == 0 || slices.Contains(s.o.Namespaces, ns)
}

// namespace returns the reader and hub of a Project; a Project outside
// Options.Namespaces is not served, whatever the viewer may read.
func (s *Server) namespace(ctx context.Context, ns string) (*namespaceCache, error) {
	if !s.served(ns) {
		return nil, notServedError{namespace: ns, served: s.o.Namespaces}
	}
	if s.caches != nil {
		return s.caches.get(ctx, ns)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nc := s.static[ns]
	if nc == nil {
		nc = &namespaceCache{reader: s.direct, hub: newHub()}
		s.static[ns] = nc
	}
	return nc, nil
}

// fleetInput reads what a FleetStage's page is built from.
func (s *Server) fleetInput(ctx context.Context, ns, name, groupBy string) (FleetInput, error) {
	nc, err := s.namespace(ctx, ns)
	if err != nil {
		return FleetInput{}, err
	}
	r := nc.reader
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fs); err != nil {
		return FleetInput{}, fmt.Errorf("error getting FleetStage %q in namespace %q: %w", name, ns, err)
	}
	in := FleetInput{FleetStage: fs, Now: s.o.Clock.Now(), GroupBy: groupBy, KargoURL: s.o.KargoURL,
		Aliases: map[string]string{}}
	ros := &fleetv1alpha1.FleetRolloutList{}
	if err := r.List(ctx, ros, client.InNamespace(ns)); err != nil {
		return FleetInput{}, fmt.Errorf("error listing FleetRollouts in namespace %q: %w", ns, err)
	}
	for i := range ros.Items {
		if ros.Items[i].Spec.FleetStage == name {
			in.Rollouts = append(in.Rollouts, ros.Items[i])
		}
	}
	mine := client.MatchingLabels{fleetv1alpha1.FleetStageLabel: name}
	stages := &kargo.StageList{}
	if err := r.List(ctx, stages, client.InNamespace(ns), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return FleetInput{}, fmt.Errorf("error listing the target Stages of FleetStage %q: %w", name, err)
	}
	in.Stages = stages.Items
	promos := &kargo.PromotionList{}
	if err := r.List(ctx, promos, client.InNamespace(ns), client.UnsafeDisableDeepCopy, mine); err != nil {
		return FleetInput{}, fmt.Errorf("error listing the Promotions of FleetStage %q: %w", name, err)
	}
	in.Promotions = promos.Items
	freight := &kargo.FreightList{}
	if err := r.List(ctx, freight, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err == nil {
		for i := range freight.Items {
			if freight.Items[i].Alias != "" {
				in.Aliases[freight.Items[i].Name] = freight.Items[i].Alias
			}
		}
	}
	var snapshots []*plan.WavePlan
	if shown := ShownRollout(fs, in.Rollouts); shown != nil {
		in.Plan = s.snapshot(ctx, shown)
		snapshots = append(snapshots, in.Plan)
		if of := rolledBack(shown, in.Rollouts); of != nil {
			in.RolledBackPlan = s.snapshot(ctx, of)
			snapshots = append(snapshots, in.RolledBackPlan)
		}
	}
	in.Labels = s.targetLabels(ctx, fs, snapshots)
	return in, nil
}

// targetLabels returns the labels of every target of a FleetStage by ID:
// from its inventory, read with the viewer's rights, or, when the viewer
// may not read it, from the plan snapshots given (a rollback's snapshot
// holds only the targets it returns, the rollout it rolls back all of
// them).
func (s *Server) targetLabels(ctx context.Context, fs *fleetv1alpha1.FleetStage, snapshots []*plan.WavePlan) map[string]map[string]string {
	now := s.o.Clock.Now()
	s.mu.Lock()
	cached, ok := s.labels[fs.UID]
	s.mu.Unlock()
	if !ok || cached.generation != fs.Generation || now.Sub(cached.readAt) >= inventoryRefresh {
		cached = inventoryLabels{generation: fs.Generation, readAt: now}
		targets, err := inventory.NewReader(s.direct).Read(ctx, fs)
		if err != nil {
			s.o.Log.V(2).Info("Cannot read the inventory: target labels come from plan snapshots",
				"FleetStage", fs.Namespace+"/"+fs.Name, "error", err.Error())
		} else {
			cached.byID = make(map[string]map[string]string, len(targets))
			for _, t := range targets {
				cached.byID[t.ID] = t.Labels
			}
		}
		s.mu.Lock()
		s.labels[fs.UID] = cached
		s.mu.Unlock()
	}
	out := make(map[string]map[string]string, len(cached.byID))
	for _, p := range snapshots {
		for _, t := range planTargets(p) {
			out[t.ID] = t.Labels
		}
	}
	// The inventory is the newest word on a target's labels.
	maps.Copy(out, cached.byID)
	return out
}

// snapshot returns a rollout's plan snapshot, read once per rollout (it is
// immutable); nil when it cannot be read, and the page then shows no
// labels or thresholds.
func (s *Server) snapshot(ctx context.Context, ro *fleetv1alpha1.FleetRollout) *plan.WavePlan {
	s.mu.Lock()
	p, ok := s.plans[ro.UID]
	s.mu.Unlock()
	if ok {
		return p
	}
	cm := &corev1.ConfigMap{}
	err := s.direct.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: fleetrollout.SnapshotName(ro.Name)}, cm)
	switch {
	case apierrors.IsForbidden(err):
		// The viewer may not read ConfigMaps: remember, and show the page
		// without labels and thresholds.
		s.o.Log.V(2).Info("Cannot read a plan snapshot", "FleetRollout", ro.Namespace+"/"+ro.Name, "error", err.Error())
	case err != nil:
		return nil // not taken yet, or a passing error: try again on the next update
	default:
		if p, err = plan.DecodeSnapshot(cm.BinaryData[plan.SnapshotKey]); err != nil {
			s.o.Log.Info("Cannot decode a plan snapshot", "FleetRollout", ro.Namespace+"/"+ro.Name, "error", err.Error())
		}
	}
	s.mu.Lock()
	s.plans[ro.UID] = p
	s.mu.Unlock()
	return p
}

// ProjectView lists the FleetStages of one Kargo Project, the ones that
// need a person first.
type ProjectView struct {
	Namespace   string
	FleetStages []FleetStageSummary
}

// mostUrgent is the rank of the Project's most urgent fleet.
func (p ProjectView) mostUrgent() int {
	rank := attentionRank[AttentionHealthy] + 1
	for _, f := range p.FleetStages {
		rank = min(rank, f.Attention.Rank())
	}
	return rank
}

// FleetStageSummary is one FleetStage in a list.
type FleetStageSummary struct {
	Name    string
	Ready   string
	Targets int32
	Waves   int
	Rollout string
	Phase   string
	// Attention says how urgently the fleet needs a person, and why.
	Attention Attention
}

// attentionFirst orders fleets by how urgently they need a person, then by
// name.
func attentionFirst(a, b FleetStageSummary) int {
	return cmp.Or(cmp.Compare(a.Attention.Rank(), b.Attention.Rank()), cmp.Compare(a.Name, b.Name))
}

// projects lists the Projects shown and their FleetStages.
func (s *Server) projects(ctx context.Context, only string) ([]ProjectView, error) {
	namespaces := s.o.Namespaces
	if only != "" {
		namespaces = []string{only}
	}
	var items []fleetv1alpha1.FleetStage
	var rollouts []fleetv1alpha1.FleetRollout
	if len(namespaces) == 0 {
		list := &fleetv1alpha1.FleetStageList{}
		if err := s.direct.List(ctx, list); err != nil {
			return nil, fmt.Errorf("error listing FleetStages in every namespace (pass --namespace to name "+
				"the Projects to show): %w", err)
		}
		items = list.Items
		ros := &fleetv1alpha1.FleetRolloutList{}
		if err := s.direct.List(ctx, ros); err != nil {
			return nil, fmt.Errorf("error listing FleetRollouts in every namespace: %w", err)
		}
		rollouts = ros.Items
	}
	for _, ns := range namespaces {
		nc, err := s.namespace(ctx, ns)
		if err != nil {
			return nil, err
		}
		list := &fleetv1alpha1.FleetStageList{}
		if err := nc.reader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("error listing FleetStages in namespace %q: %w", ns, err)
		}
		items = append(items, list.Items...)
		ros := &fleetv1alpha1.FleetRolloutList{}
		if err := nc.reader.List(ctx, ros, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("error listing FleetRollouts in namespace %q: %w", ns, err)
		}
		rollouts = append(rollouts, ros.Items...)
	}
	type fleetKey struct{ ns, name string }
	rolloutsOf := map[fleetKey][]fleetv1alpha1.FleetRollout{}
	for i := range rollouts {
		k := fleetKey{rollouts[i].Namespace, rollouts[i].Spec.FleetStage}
		rolloutsOf[k] = append(rolloutsOf[k], rollouts[i])
	}
	byNS := map[string]*ProjectView{}
	for _, ns := range namespaces {
		byNS[ns] = &ProjectView{Namespace: ns}
	}
	for i := range items {
		fs := &items[i]
		pv := byNS[fs.Namespace]
		if pv == nil {
			pv = &ProjectView{Namespace: fs.Namespace}
			byNS[fs.Namespace] = pv
		}
		sum := FleetStageSummary{Name: fs.Name, Targets: fs.Status.Targets.Selected, Waves: len(fs.Status.Waves),
			Rollout: fs.Status.CurrentRollout, Ready: "Unknown",
			Attention: FleetAttention(fs, rolloutsOf[fleetKey{fs.Namespace, fs.Name}])}
		for _, c := range fs.Status.Conditions {
			if c.Type == fleetv1alpha1.ReadyCondition {
				sum.Ready = string(c.Status)
			}
		}
		if sum.Rollout == "" {
			sum.Rollout = fs.Status.LastRollout
		}
		pv.FleetStages = append(pv.FleetStages, sum)
	}
	out := make([]ProjectView, 0, len(byNS))
	for _, pv := range byNS {
		slices.SortFunc(pv.FleetStages, attentionFirst)
		out = append(out, *pv)
	}
	// The Project whose fleet needs a person most comes first.
	slices.SortFunc(out, func(a, b ProjectView) int {
		return cmp.Or(cmp.Compare(a.mostUrgent(), b.mostUrgent()), cmp.Compare(a.Namespace, b.Namespace))
	})
	return out, nil
}

// Handler returns the dashboard's HTTP handler for a server listening on
// listen. It answers GET and HEAD only (any other method gets 405), Host
// headers of the listen address, localhost and Options.AllowedHosts only
// (others get 403), and sets its security headers on every response.
func (s *Server) Handler(listen net.Addr) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS())))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/projects", http.StatusFound)
	})
	mux.HandleFunc("GET /projects", s.handleProjects)
	mux.HandleFunc("GET /projects/{ns}", s.handleProjects)
	mux.HandleFunc("GET /projects/{ns}/fleetstages/{name}", s.handleFleetStage)
	mux.HandleFunc("GET /projects/{ns}/fleetstages/{name}/waves/{wave}/analysis", s.handleWaveAnalysis)
	mux.HandleFunc("GET /api/projects/{ns}/fleetstages/{name}/grid", s.handleGrid)
	mux.HandleFunc("GET /api/projects/{ns}/fleetstages/{name}/targets/{id}", s.handleTarget)
	mux.HandleFunc("GET /api/projects/{ns}/fleetstages/{name}/events", s.handleEvents)
	mux.HandleFunc("GET /api/projects/{ns}/fleetstages/{name}/audit", s.handleAudit)
	return guarded(newHostPolicy(listen, s.o.AllowedHosts), readOnly(gzipped(mux)))
}

// readOnly refuses every method but GET and HEAD: the dashboard never
// changes anything.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Serve serves the dashboard on ln until ctx is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(ln.Addr()), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

// URL is the base URL of a dashboard listening on ln.
func URL(ln net.Listener) string {
	return "http://" + ln.Addr().String()
}

// quoteList returns the values quoted and comma-separated.
func quoteList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	return strings.Join(quoted, ", ")
}
