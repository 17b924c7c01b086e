package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
)

// controllerOptions configures `kargo-fleet controller`.
type controllerOptions struct {
	kubeconfig       string
	metricsAddr      string
	metricsSecure    bool
	probeAddr        string
	pprofAddr        string
	leaderElection   bool
	leaderElectionNS string
	webhooks         bool
	webhookPort      int
	webhookAddr      string
	webhookHost      string
	webhookCertDir   string
	webhookCert      webhookCertOptions
	stepCert         stepCertOptions
	metricsCert      metricsCertOptions
	concurrency      int
	stepServerURL    string
	dashboardURL     string
	stepShardURLs    []string
	shardURLs        map[string]string // stepShardURLs, parsed by validate
	inventoryNS      []string
	argocdNS         []string
	kargoGlobalSANS  []string
	auditSegments    int
	controllerUser   string
	guardWebhooks    string
	qps              float32
	burst            int
	zap              zap.Options
	errOut           io.Writer
}

func newControllerCommand(_, errOut io.Writer) *cobra.Command {
	o := &controllerOptions{errOut: errOut}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the fleet controller and the step server",
		Long: "Runs the FleetStage and FleetRollout reconcilers (on the elected leader only) and the " +
			"step server (on every replica, so Kargo's http steps always reach one).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			// SIGTERM (a rolling update, a drain) stops the manager
			// gracefully: running reconciles end, the leader hands its
			// Lease over, then the process exits.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cmd.SetContext(ctx)
			return o.run(cmd)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func (o *controllerOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG, else the in-cluster config, else ~/.kube/config).")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	f.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to callers allowed to get the non-resource URL /metrics (TokenReview and SubjectAccessReview).")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's net/http/pprof profiles (default: off).")
	f.BoolVar(&o.leaderElection, "leader-elect", true, "Elect a leader so only one replica orchestrates rollouts.")
	f.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: $POD_NAMESPACE, else the pod's).")
	f.BoolVar(&o.webhooks, "webhooks", true, "Serve the FleetStage validating webhook.")
	f.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the webhook server (--webhook-bind-address wins when set).")
	f.StringVar(&o.webhookAddr, "webhook-bind-address", "", "Address of the webhook server, host:port (default: every interface, --webhook-port).")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "Folder with tls.crt and tls.key for the webhook server (default: controller-runtime's).")
	o.webhookCert.addFlags(f)
	o.stepCert.addFlags(f)
	o.metricsCert.addFlags(f)
	f.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "Parallel reconciles per controller.")
	f.StringVar(&o.dashboardURL, "dashboard-url", "",
		"Base URL of the fleet dashboard (kargo-fleet dashboard): wave Stage descriptions and step outputs link to "+
			"a FleetStage's page there. Empty: no dashboard link.")
	f.StringVar(&o.stepServerURL, "step-server-url", "", "URL wave Stages pass to the fleet-wave task to reach the step server (default: the task's in-cluster Service URL).")
	f.StringSliceVar(&o.stepShardURLs, "step-server-shard-urls", nil,
		"Comma-separated shard=URL pairs: the step server URL the Kargo controller of each shard uses, for shard "+
			"controllers that reach the step server another way (default: --step-server-url). docs/shards.md.")
	f.StringSliceVar(&o.inventoryNS, "inventory-namespaces", inventory.DefaultNamespaces,
		"Comma-separated namespaces FleetStage target sources may read inventory (Argo CD cluster Secrets, Kargo "+
			"Targets, ClusterProfiles) from, besides the FleetStage's own namespace, which is always allowed. "+
			`Default: the Argo CD namespace "argocd" and the FleetStage's own namespace. `+
			"Pass an empty value to allow only the FleetStage's own namespace.")
	f.StringSliceVar(&o.kargoGlobalSANS, "kargo-global-service-account-namespaces", nil,
		"Comma-separated namespaces where Kargo's API server also maps people's OIDC claims onto ServiceAccounts "+
			"(its GLOBAL_SERVICE_ACCOUNT_NAMESPACES, e.g. kargo): the rights of a person acting through the Kargo UI "+
			"are looked up there as well as in the Project. Default: the Project only.")
	f.IntVar(&o.auditSegments, "audit-retention-segments", auditstore.DefaultKeep,
		"Audit segments each FleetStage's audit trail keeps, of 256 records each: the controller deletes the oldest "+
			"beyond them, after recording that it does (docs/audit.md).")
	f.StringSliceVar(&o.argocdNS, "argocd-namespaces", []string{kargo.ArgoCDDefaultNamespace},
		"Comma-separated namespaces whose Argo CD Applications the controller reads to see what each target runs "+
			"(the Application authorizing its target Stage: its sync, who started it, its health). Pass an empty "+
			"value to read none. Read only when the cluster serves the Application kind.")
	f.StringVar(&o.controllerUser, "controller-username", "",
		"Kubernetes user name of this controller, whose FleetRollout requests the webhook trusts (default: its "+
			"ServiceAccount's, from $POD_NAMESPACE and $SERVICE_ACCOUNT_NAME, each kargo-fleet when unset).")
	f.StringVar(&o.guardWebhooks, "guard-webhooks", "",
		"ValidatingWebhookConfiguration holding the Promotion admission guard's webhooks: the controller keeps their "+
			"match condition to the fleets' own Stages, so other Promotions never reach the guard (default: none kept, "+
			"the guard sees every Promotion of a fleet Project).")
	f.Float32Var(&o.qps, "kube-api-qps", 100, "Sustained requests per second to the apiserver: expanding a fleet writes one Stage per target.")
	f.IntVar(&o.burst, "kube-api-burst", 200, "Burst of requests to the apiserver.")
	addGoFlags(cmd, o.zap.BindFlags)
}

// namespaces returns --inventory-namespaces without empty entries, never nil
// (nil would mean the default).
func (o *controllerOptions) namespaces() []string {
	return nonEmpty(o.inventoryNS)
}

// nonEmpty returns a namespace flag's entries without empty ones, never
// nil.
func nonEmpty(namespaces []string) []string {
	out := []string{}
	for _, ns := range namespaces {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

func (o *controllerOptions) validate() error {
	if o.probeAddr == "" || o.probeAddr == "0" {
		return errors.New("--health-probe-bind-address must be set: Kubernetes probes need it")
	}
	if o.webhookAddr != "" {
		host, port, err := net.SplitHostPort(o.webhookAddr)
		if err != nil {
			return fmt.Errorf("--webhook-bind-address: %w", err)
		}
		if o.webhookPort, err = strconv.Atoi(port); err != nil || o.webhookPort < 1 || o.webhookPort > 65535 {
			return fmt.Errorf("--webhook-bind-address: invalid port %q", port)
		}
		o.webhookHost = host
	}
	if _, ok := link.Base(o.dashboardURL); o.dashboardURL != "" && !ok {
		return fmt.Errorf("--dashboard-url %q: must be an http(s) URL", o.dashboardURL)
	}
	shardURLs, err := parseShardURLs(o.stepShardURLs)
	if err != nil {
		return err
	}
	o.shardURLs = shardURLs
	if err := o.metricsCert.validate(o.metricsSecure); err != nil {
		return err
	}
	return o.webhookCert.validate(o.webhooks, o.webhookCertDir)
}

func (o *controllerOptions) run(cmd *cobra.Command) error {
	o.zap.DestWriter = o.errOut
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	cfg, err := o.restConfig()
	if err != nil {
		return fmt.Errorf("error loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	mgr, err := manager.New(cfg, manager.Options{
		Webhooks:                            o.webhooks,
		WebhookServer:                       webhook.Options{Host: o.webhookHost, Port: o.webhookPort, CertDir: o.webhookCertDir},
		MaxConcurrentReconciles:             o.concurrency,
		StepServerURL:                       o.stepServerURL,
		DashboardURL:                        o.dashboardURL,
		StepServerShardURLs:                 o.shardURLs,
		MetricsBindAddress:                  o.metricsAddr,
		MetricsSecure:                       o.metricsSecure,
		MetricsCertDir:                      o.metricsCert.dir,
		HealthProbeBindAddress:              o.probeAddr,
		PprofBindAddress:                    o.pprofAddr,
		LeaderElection:                      o.leaderElection,
		LeaderElectionNamespace:             cmp.Or(o.leaderElectionNS, os.Getenv(stepserver.EnvPodNamespace)),
		InventoryNamespaces:                 o.namespaces(),
		ArgoCDNamespaces:                    nonEmpty(o.argocdNS),
		KargoGlobalServiceAccountNamespaces: nonEmpty(o.kargoGlobalSANS),
		AuditRetentionSegments:              o.auditSegments,
		ControllerUsername:                  o.controllerUser,
		PromotionGuardWebhooks:              o.guardWebhooks,
	})
	if err != nil {
		return err
	}
	if o.webhooks {
		// The webhook server reads its certificate when it starts, so a
		// generated one is written before the manager starts.
		if err := o.webhookCert.setup(cmd.Context(), cfg, mgr, o.webhookCertDir); err != nil {
			return err
		}
	}
	// The step server reads its certificate's files when it starts.
	if err := o.stepCert.setup(cmd.Context(), cfg, mgr); err != nil {
		return err
	}
	// So does the metrics server.
	if err := o.metricsCert.setup(cmd.Context(), cfg, mgr); err != nil {
		return err
	}
	if err := o.addChecks(mgr); err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}

// restConfig loads the kubeconfig named by --kubeconfig, else what
// controller-runtime finds ($KUBECONFIG, in-cluster, ~/.kube/config).
// controller-runtime's own --kubeconfig flag lives on the standard flag set,
// which this command does not parse, hence the explicit flag.
func (o *controllerOptions) restConfig() (*rest.Config, error) {
	if o.kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	}
	return ctrl.GetConfig()
}

// parseShardURLs reads --step-server-shard-urls: shard=URL pairs, each
// shard a valid shard name and each URL absolute.
func parseShardURLs(pairs []string) (map[string]string, error) {
	out := make(map[string]string, len(pairs))
	for _, pair := range pairs {
		shard, u, found := strings.Cut(pair, "=")
		if !found {
			return nil, fmt.Errorf("--step-server-shard-urls: %q is not shard=URL", pair)
		}
		if msg := plan.ValidShardName(shard); msg != "" {
			return nil, fmt.Errorf("--step-server-shard-urls: shard %q %s", shard, msg)
		}
		if parsed, err := url.Parse(u); err != nil || parsed.Scheme == "" || parsed.Host == "" {
			return nil, fmt.Errorf("--step-server-shard-urls: shard %q: %q is not an absolute URL", shard, u)
		}
		out[shard] = u
	}
	return out, nil
}
