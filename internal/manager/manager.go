package manager

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetrollouts"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstages"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/targetguard"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/versions"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// Component is a part of kargo-fleet a manager can run.
type Component uint

// Components. The zero value of Options.Components runs them all, as
// `kargo-fleet controller` does.
const (
	// FleetStages is the FleetStage reconciler.
	FleetStages Component = 1 << iota
	// FleetRollouts is the FleetRollout reconciler, the rollout engine.
	FleetRollouts
	// Versions is the version refresh of FleetStage status.
	Versions
	// StepServer serves Kargo's http steps, on every replica.
	StepServer
	// TokenMinter writes each Project's step token Secret.
	TokenMinter
	// TargetGuard keeps Freight off target Stages unless kargo-fleet or an
	// operator promoting that one target put it there.
	TargetGuard

	// AllComponents is everything.
	AllComponents = FleetStages | FleetRollouts | Versions | StepServer | TokenMinter | TargetGuard
	// Orchestration is everything but the step server: what the elected
	// leader does on top of serving steps.
	Orchestration = AllComponents &^ StepServer
)

// Options configures New.
type Options struct {
	// Components selects what runs; zero means AllComponents.
	Components Component
	// Webhooks serves the FleetStage validating webhook from the manager's
	// webhook server (which needs a serving certificate).
	Webhooks bool
	// WebhookServer configures the webhook server (port, certificates).
	WebhookServer webhook.Options
	// MaxConcurrentReconciles bounds parallel reconciles per controller.
	MaxConcurrentReconciles int
	// StepServerURL, when set, is the step server URL wave Stages pass to
	// the fleet-wave task (default: the task's in-cluster Service URL).
	StepServerURL string
	// DashboardURL is the fleet dashboard's base URL: wave Stage
	// descriptions and step outputs link to a FleetStage's page there.
	// Empty: no dashboard link.
	DashboardURL string
	// StepServerShardURLs maps a Kargo shard to the step server URL its
	// Kargo controller uses: the wave Stages of that shard pass it to the
	// fleet-wave task, and target Stages of that shard carry it in
	// ${{ vars.fleetStepServerURL }}.
	StepServerShardURLs map[string]string
	// StepServer configures the step server; nil reads it from the
	// environment (stepserver.OptionsFromEnv).
	StepServer *stepserver.Options
	// InventoryNamespaces are the namespaces FleetStage sources may read
	// inventory from besides the FleetStage's own; nil means
	// inventory.DefaultNamespaces (argocd).
	InventoryNamespaces []string
	// ArgoCDNamespaces are the namespaces whose Argo CD Applications the
	// version refresh reads; empty: none.
	ArgoCDNamespaces []string
	// KargoGlobalServiceAccountNamespaces are the namespaces besides a
	// Project's where Kargo's API server maps people's OIDC claims onto
	// ServiceAccounts (its GLOBAL_SERVICE_ACCOUNT_NAMESPACES): the rights of
	// a person acting through the Kargo UI are looked up there too.
	KargoGlobalServiceAccountNamespaces []string
	// AuditRetentionSegments is how many segments each FleetStage's audit
	// trail keeps; 0 means auditstore.DefaultKeep.
	AuditRetentionSegments int
	// ControllerUsername is the controller's Kubernetes user name, whose
	// FleetRollout requests the webhook trusts; empty means
	// fswebhook.DefaultControllerUsername().
	ControllerUsername string
	// PromotionGuardWebhooks names the ValidatingWebhookConfiguration whose
	// Promotion admission webhooks get a match condition narrowing them to
	// the fleets' own Stages (targetguard.GuardScope); empty keeps none.
	PromotionGuardWebhooks string

	// MetricsBindAddress serves Prometheus metrics; "" or "0" disables.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS to callers the API server
	// authenticates (TokenReview) and authorizes (SubjectAccessReview: get
	// on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key of the secure metrics
	// endpoint, reloaded when they change; without them there (or when
	// empty) the endpoint serves a self-signed certificate nobody can
	// verify.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz; "" disables. The
	// caller adds the checks (the controller command checks the webhook and
	// step servers).
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles; "" disables.
	PprofBindAddress string
	// LeaderElection elects a leader for everything but the step server.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease (default: the pod's).
	LeaderElectionNamespace string
	// Logger is the manager's logger (default: controller-runtime's).
	Logger logr.Logger
	// NewClient, when set, builds the manager's client (tests wrap it to
	// count writes).
	NewClient client.NewClientFunc
	// SkipNameValidation lets one process build several managers with the
	// same controller names (test environments restart the controller).
	SkipNameValidation bool
}

// LeaderElectionID names the Lease of the leader election.
const LeaderElectionID = "kargo-fleet-controller"

// New returns a manager with the scheme, cache options and components of
// kargo-fleet, ready to Start.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.Components == 0 {
		o.Components = AllComponents
	}
	metricsAddr := o.MetricsBindAddress
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	mo := ctrl.Options{
		Scheme:                  NewScheme(),
		Cache:                   CacheOptions(secretNamespaces(o)),
		Metrics:                 metricsOptions(metricsAddr, o.MetricsSecure, o.MetricsCertDir),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		PprofBindAddress:        o.PprofBindAddress,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The controller's process ends when its manager does (the
		// controller command returns), so the leader hands its Lease over
		// on a graceful stop: a rolling restart's next leader starts at
		// once instead of after the Lease's 15 s.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(o.WebhookServer),
		NewClient:                     o.NewClient,
	}
	if o.Logger.GetSink() != nil {
		mo.Logger = o.Logger
	}
	if o.SkipNameValidation {
		skip := true
		mo.Controller = config.Controller{SkipNameValidation: &skip}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("error creating manager: %w", err)
	}
	if err := setup(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// metricsOptions returns the metrics server's options: behind the API
// server's authentication and authorization when secure, serving the
// certificate in certDir (generated by the controller or mounted), which
// the scraper verifies against its CA. RBAC in rbac.go.
func metricsOptions(addr string, secure bool, certDir string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.CertDir = certDir
	}
	return o
}

// setup registers the selected components with the manager.
func setup(mgr ctrl.Manager, o Options) error {
	copts := controller.Options{MaxConcurrentReconciles: max(1, o.MaxConcurrentReconciles)}
	records := stagerecord.NewReader(mgr.GetAPIReader())
	var sk *signingKeys
	if o.Components&(StepServer|TokenMinter|FleetRollouts|Versions|TargetGuard) != 0 {
		var err error
		if sk, err = newSigningKeys(mgr, o); err != nil {
			return err
		}
	}
	// The marks that tell the controller's own Promotions from others'.
	var marker *provenance.Marker
	if sk != nil {
		marker = provenance.NewMarker(provenance.StepKeys{Source: sk.keys})
	}
	trails, err := auditWriter(mgr, o)
	if err != nil {
		return err
	}
	var scope *targetguard.GuardScope
	if o.Components&TargetGuard != 0 {
		scope = targetguard.NewGuardScope(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetClient(), o.PromotionGuardWebhooks)
	}
	if o.Components&FleetStages != 0 {
		if err := setupFleetStages(mgr, o, copts, records, scope, trails); err != nil {
			return err
		}
	}
	if o.Components&Versions != 0 {
		if err := setupVersions(mgr, o, records, marker, trails); err != nil {
			return err
		}
	}
	if o.Components&FleetRollouts != 0 {
		r := fleetrollouts.NewFleetRolloutReconciler(mgr.GetClient(), mgr.GetAPIReader(), inventoryReader(mgr, o),
			kargoRecorder(mgr, "kargo-fleet-rollout", trails), clock.RealClock{}, refreshPromotion).WithStageRecords(records).WithMarker(marker).
			WithGestures(fswebhook.Actor(webhookOptions(o).ControllerUsername), personRights(mgr, o))
		r.DashboardURL = o.DashboardURL
		if err := r.SetupWithManager(mgr, copts); err != nil {
			return fmt.Errorf("error setting up the FleetRollout reconciler: %w", err)
		}
	}
	if o.Components&TargetGuard != 0 {
		if err := setupTargetGuard(mgr, copts, scope, marker, trails); err != nil {
			return err
		}
	}
	if o.Webhooks {
		wo := webhookOptions(o)
		if trails != nil {
			wo.Audit = trails
		}
		if err := fswebhook.Setup(mgr, wo); err != nil {
			return err
		}
	}
	return setupSteps(mgr, o, records, sk)
}

// setupFleetStages registers the FleetStage reconciler.
func setupFleetStages(mgr ctrl.Manager, o Options, copts controller.Options, records *stagerecord.Reader,
	scope *targetguard.GuardScope, trails *auditstore.Writer) error {
	r := fleetstages.NewFleetStageReconciler(mgr.GetClient(), inventoryReader(mgr, o),
		kargoRecorder(mgr, "kargo-fleet-fleetstage", trails), clock.RealClock{}).WithStageRecords(records)
	if scope != nil {
		r = r.WithGuardScope(scope)
	}
	r.StepServerURL = o.StepServerURL
	r.StepServerShardURLs = o.StepServerShardURLs
	if err := r.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("error setting up the FleetStage reconciler: %w", err)
	}
	return nil
}

// setupVersions registers the version refresh, which also watches Argo CD
// Applications when configured.
func setupVersions(mgr ctrl.Manager, o Options, records *stagerecord.Reader, marker *provenance.Marker,
	trails *auditstore.Writer) error {
	r := versions.NewReconciler(mgr.GetClient(), clock.RealClock{},
		kargoRecorder(mgr, "kargo-fleet-drift", trails)).WithStageRecords(records).WithMarker(marker)
	apps, err := newApplicationCache(mgr, o.ArgoCDNamespaces)
	if err != nil {
		return err
	}
	if apps != nil {
		r = r.WithApplications(apps)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("error setting up the version refresh: %w", err)
	}
	return nil
}

// setupTargetGuard registers the target guard, the Promotion guard's
// namespace labels and its scope.
func setupTargetGuard(mgr ctrl.Manager, copts controller.Options, scope *targetguard.GuardScope, marker *provenance.Marker,
	trails *auditstore.Writer) error {
	r := targetguard.NewReconciler(mgr.GetClient(), kargoRecorder(mgr, "kargo-fleet-targetguard", trails), marker, fswebhook.NewSubjectAccessReviewer(mgr.GetClient()))
	if err := r.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("error setting up the target guard: %w", err)
	}
	if err := targetguard.NewNamespaceLabeler(mgr.GetClient()).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("error setting up the Promotion guard's namespace labels: %w", err)
	}
	if err := scope.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("error setting up the Promotion guard's scope: %w", err)
	}
	return nil
}

// kargoRecorder is the named Event recorder that also shows Events about a
// Kargo object on Kargo's Events page and records the decisions they report
// in the fleets' audit trails (kargoevents.Recorder).
func kargoRecorder(mgr ctrl.Manager, name string, trails *auditstore.Writer) *kargoevents.Recorder {
	r := kargoevents.NewRecorder(mgr.GetEventRecorder(name), mgr.GetClient(), clock.RealClock{}, name)
	if trails != nil {
		r = r.WithAudit(trails)
	}
	return r
}

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetauditsegments,verbs=get;list;create;update;delete
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages/status,verbs=patch

// auditWriter is the writer of the fleets' audit trails, run by the manager
// on every replica; nil when no component decides anything.
func auditWriter(mgr ctrl.Manager, o Options) (*auditstore.Writer, error) {
	if o.Components&(FleetStages|FleetRollouts|Versions|TargetGuard) == 0 && !o.Webhooks {
		return nil, nil
	}
	w := auditstore.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), clock.RealClock{}, o.AuditRetentionSegments,
		ctrl.Log.WithName("audit"))
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("error adding the audit trail writer: %w", err)
	}
	return w, nil
}

// refreshPromotion asks Kargo to poll a wave Promotion again at once, so the
// next wave starts about a second after this one passed instead of up to a
// pollInterval later.
func refreshPromotion(ctx context.Context, c client.Client, namespace, promotion string) error {
	return kargoclient.RefreshPromotion(ctx, c, types.NamespacedName{Namespace: namespace, Name: promotion})
}

// setupSteps registers the step server, which runs on every replica, and the
// step token minter, which runs on the leader.
// signingKeys are the step token signing keys, from which the marks of the
// controller's Promotions are derived too.
type signingKeys struct {
	opts  stepserver.Options
	keys  *steptoken.SecretKey
	cache cache.Cache // the informer on the key Secret; nil for a key file
}

// newSigningKeys reads the step server's options and sets up the signing
// key source: read through an informer on its one Secret, so every replica
// uses a rotated key as soon as its watch sees it.
func newSigningKeys(mgr ctrl.Manager, o Options) (*signingKeys, error) {
	var opts stepserver.Options
	if o.StepServer != nil {
		opts = *o.StepServer
	} else {
		var err error
		if opts, err = stepserver.OptionsFromEnv(); err != nil {
			return nil, fmt.Errorf("error configuring the step server: %w", err)
		}
	}
	keyReader := mgr.GetAPIReader()
	var keyCache cache.Cache
	if opts.SigningKeyFile == "" {
		var err error
		if keyCache, err = namedSecretCache(mgr, opts.SigningKeySecret.Namespace, opts.SigningKeySecret.Name); err != nil {
			return nil, err
		}
		keyReader = keyCache
	}
	return &signingKeys{opts: opts, keys: steptoken.NewSecretKey(opts.SigningKeyFile, opts.SigningKeySecret, keyReader, mgr.GetClient()),
		cache: keyCache}, nil
}

func setupSteps(mgr ctrl.Manager, o Options, records *stagerecord.Reader, sk *signingKeys) error {
	if o.Components&(StepServer|TokenMinter) == 0 {
		return nil
	}
	opts, keys, keyCache := sk.opts, sk.keys, sk.cache
	if o.Components&StepServer != 0 && opts.Enabled() {
		store := steps.NewAPIStore(mgr.GetClient(), mgr.GetAPIReader()).WithApprovalsFrom(mgr.GetClient())
		server := stepserver.New(opts, stepserver.Deps{
			Reader:       mgr.GetAPIReader(),
			FleetStages:  mgr.GetClient(),
			Namespaces:   mgr.GetClient(),
			StageRecords: records,
			Keys:         keys,
			Steps: steps.DefaultSteps(store, steps.NewPlanWindows(), clock.RealClock{}, steps.WithDashboardURL(o.DashboardURL),
				steps.WithPersonRights(personRights(mgr, o))),
			Metrics: metrics.Registry,
			Clock:   clock.RealClock{},
		})
		if err := mgr.Add(server); err != nil {
			return fmt.Errorf("error adding the step server: %w", err)
		}
	}
	if o.Components&TokenMinter != 0 {
		tokenCache, err := namedSecretCache(mgr, "", fleetv1alpha1.StepTokenSecretName)
		if err != nil {
			return err
		}
		minter := steptoken.NewMinter(mgr.GetClient(), tokenCache, keys, clock.RealClock{})
		if err := minter.SetupWithManager(mgr, steptoken.MinterWatches{Tokens: tokenCache, Keys: keyCache}); err != nil {
			return fmt.Errorf("error setting up the step token minter: %w", err)
		}
	}
	return nil
}
