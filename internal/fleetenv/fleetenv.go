// Package fleetenv starts a complete local fleet environment on one machine:
// a real kube-apiserver and etcd (internal/envtest), the Kargo simulator in place
// of Kargo (clearly labelled as such), kargo-fleet's controller and step
// server, and the fleet ClusterPromotionTasks the chart ships. Integration
// tests and `make demo` both run on it.
//
// The controller runs as its own user, granted exactly the RBAC the chart
// renders (its ClusterRole generated from the reconcilers' RBAC markers, and
// the Roles for Secrets in the namespaces it may read them from), so missing
// permissions show up here as they would in a cluster. Kargo's webhooks check
// the custom "promote" verb for that user like real Kargo does.
package fleetenv

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
)

const (
	// ControllerNamespace is where the controller keeps its signing key.
	ControllerNamespace = "kargo-fleet"
	// ControllerUser is the user the kargo-fleet controller runs as.
	ControllerUser = "system:serviceaccount:kargo-fleet:kargo-fleet"
	// KargoUser is the user the Kargo simulator runs as.
	KargoUser = "system:serviceaccount:kargo:kargo-controller"
)

// Options tunes the environment.
type Options struct {
	// Simulator configures the Kargo simulator. A zero PollFloor is set to
	// 200 ms so rollouts move fast; real Kargo's floor is 10 s. Its Shards
	// start a simulated Kargo controller per shard besides the default one.
	Simulator kargosim.Options
	// Controller configures kargo-fleet's controller; StepServerURL and
	// Webhooks are set by Start.
	Controller manager.Options
	// ControllerUsername is the user the FleetRollout webhook trusts as
	// kargo-fleet's controller (default ControllerUser): set it when the
	// controller runs elsewhere under another identity.
	ControllerUsername string
	// ExternalController leaves kargo-fleet's controller and step server
	// out of this process: the caller runs them elsewhere (e.g. the
	// kargo-fleet binary, to measure it on its own) with ControllerConfig
	// and StepServerEnv.
	ExternalController bool
}

// Env is a running local fleet environment.
type Env struct {
	*envtest.Env
	// StepServerURL is where the step server listens.
	StepServerURL string
	// Simulator is the running Kargo simulator (its StopShard stops one
	// shard's simulated Kargo controller).
	Simulator *kargosim.Simulator

	opts          Options
	controllerCfg *rest.Config
	stepEnv       map[string]string
	simStop       context.CancelFunc
	simDone       chan error
	ctrlStop      context.CancelFunc
	ctrlDone      chan error
	stepsStop     context.CancelFunc
	stepsDone     chan error
}

// PromotionGuardWebhookConfiguration is the name of the configuration
// holding the chart's Promotion guard webhooks: the chart's own for a
// release "kargo-fleet", so the chart's RBAC lets the controller keep
// their match condition.
const PromotionGuardWebhookConfiguration = "kargo-fleet"

// Start starts everything. Call Stop when done.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Controller.PromotionGuardWebhooks == "" {
		opts.Controller.PromotionGuardWebhooks = PromotionGuardWebhookConfiguration
	}
	if opts.Simulator.PollFloor == 0 {
		opts.Simulator.PollFloor = 200 * time.Millisecond
	}
	mutating, validating := kargosim.WebhookConfigurations()
	validating = append(validating,
		envtest.ValidatingWebhook("fleetstages.fleet.kargo-fleet.io",
			"fleet.kargo-fleet.io", "v1alpha1", "fleetstages", fswebhook.ValidatePath),
		// As the chart does: deleting an unfinished FleetRollout aborts it.
		envtest.ValidatingWebhookFor("fleetrollouts.fleet.kargo-fleet.io",
			"fleet.kargo-fleet.io", "v1alpha1", "fleetrollouts", fswebhook.ValidateRolloutPath,
			admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
		envtest.ValidatingWebhook("freightpolicies.fleet.kargo-fleet.io",
			"fleet.kargo-fleet.io", "v1alpha1", "freightpolicies", fswebhook.ValidateFreightPolicyPath))
	guard, err := PromotionGuardWebhooks(PromotionGuardWebhookConfiguration, nil)
	if err != nil {
		return nil, err
	}
	// Validating webhooks run after every mutating one: the guard sees the
	// Promotion as Kargo's defaulting webhook renamed and annotated it.
	validating = append(validating, guard)
	base, err := envtest.Start(envtest.WithWebhooks(mutating, validating))
	if err != nil {
		return nil, err
	}
	e := &Env{Env: base, opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if err := e.installControllerRBAC(ctx); err != nil {
		return nil, err
	}
	if err := e.installTasks(ctx); err != nil {
		return nil, err
	}
	if err := e.configureStepServer(ctx); err != nil {
		return nil, err
	}
	if e.controllerCfg, err = e.AddUser(ControllerUser); err != nil {
		return nil, err
	}
	if err := e.startSimulator(); err != nil {
		return nil, err
	}
	if opts.ExternalController {
		return e, nil
	}
	if err := e.startStepServer(); err != nil {
		return nil, err
	}
	if err := e.StartController(); err != nil {
		return nil, err
	}
	return e, nil
}

// installControllerRBAC grants the controller's user exactly the RBAC (and
// the admission policies) the chart renders for a release "kargo-fleet" in ControllerNamespace with the
// default inventory namespaces: its ClusterRoles, and the Roles for its own
// Secrets, the inventory's Secrets and leader election. The namespaces those
// Roles live in are created first.
func (e *Env) installControllerRBAC(ctx context.Context) error {
	objs, err := helmchart.Render(helmchart.Release{Name: "kargo-fleet", Namespace: ControllerNamespace,
		Values: map[string]any{"controller": map[string]any{"inventoryNamespaces": anySlice(inventory.DefaultNamespaces)}}})
	if err != nil {
		return fmt.Errorf("error rendering the chart's RBAC: %w", err)
	}
	var rbac []client.Object
	namespaces := map[string]bool{ControllerNamespace: true}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			// The admission policies that narrow the controller's writes:
			// the controller runs under them here as in a cluster.
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			continue
		}
		if o.GetNamespace() != "" {
			namespaces[o.GetNamespace()] = true
		}
		rbac = append(rbac, o)
	}
	var create []client.Object
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		create = append(create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, o := range append(create, rbac...) {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("error creating %s %q: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// anySlice converts a []string to the []any Helm's values schema check takes
// for a list.
func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// installTasks applies the ClusterPromotionTasks the chart ships.
func (e *Env) installTasks(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "charts", "kargo-fleet", "tasks", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no ClusterPromotionTasks found under charts/kargo-fleet/tasks: %w", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			task := &kargo.ClusterPromotionTask{}
			if err := dec.Decode(task); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("error decoding %s: %w", f, err)
			}
			if task.Name == "" {
				continue
			}
			if err := e.Client.Create(ctx, task); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("error creating ClusterPromotionTask %q: %w", task.Name, err)
			}
		}
	}
	return nil
}

// configureStepServer picks a loopback port and a signing key for the step
// server, which reads them from the environment like in a Pod.
func (e *Env) configureStepServer(_ context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kargo-fleet-key-")
	if err != nil {
		return err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return err
	}
	e.stepEnv = map[string]string{
		stepserver.EnvAddr:           addr,
		stepserver.EnvSigningKeyFile: keyFile,
		stepserver.EnvPodNamespace:   ControllerNamespace,
	}
	for k, v := range e.stepEnv {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	e.StepServerURL = "http://" + addr
	return nil
}

func (e *Env) startSimulator() error {
	cfg, err := e.AddUser(KargoUser, "system:masters")
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        e.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(e.WebhookServerOptions()),
		Controller:    config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		return err
	}
	e.Simulator = kargosim.New(mgr, e.opts.Simulator)
	if err := e.Simulator.SetupWithManager(mgr); err != nil {
		return err
	}
	// The FleetStage and FleetRollout webhooks are served next to Kargo's:
	// they stay up while the controller is stopped and restarted. What they
	// refuse goes into the audit trails as the controller's user, as a
	// controller replica serving them records it.
	trails, err := e.auditWriter()
	if err != nil {
		return err
	}
	if err := mgr.Add(trails); err != nil {
		return err
	}
	if err := fswebhook.Setup(mgr, fswebhook.Options{
		InventoryNamespaces: inventory.DefaultNamespacePolicy(), ControllerUsername: cmp.Or(e.opts.ControllerUsername, ControllerUser),
		Audit: trails,
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.simStop, e.simDone = cancel, make(chan error, 1)
	go func() { e.simDone <- mgr.Start(ctx) }()
	return waitFor(20*time.Second, func() error { return mgr.GetWebhookServer().StartedChecker()(nil) })
}

// auditWriter is an audit trail writer with the controller's identity.
func (e *Env) auditWriter() (*auditstore.Writer, error) {
	c, err := client.New(e.ControllerConfig(), client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, fmt.Errorf("error creating the audit writer's client: %w", err)
	}
	return auditstore.NewWriter(c, c, clock.RealClock{}, 0, ctrl.Log.WithName("audit")), nil
}

// startStepServer runs the step server in a manager of its own, as a
// replica that is not the leader would: it stays up while the orchestrating
// controller is stopped and started again.
func (e *Env) startStepServer() error {
	stop, done, err := e.startManager(manager.Options{Components: manager.StepServer})
	if err != nil {
		return err
	}
	e.stepsStop, e.stepsDone = stop, done
	return waitFor(20*time.Second, func() error {
		select {
		case err := <-done:
			return fmt.Errorf("the step server stopped: %w", err)
		default:
		}
		c, err := net.DialTimeout("tcp", e.StepServerURL[len("http://"):], time.Second)
		if err == nil {
			return c.Close()
		}
		return err
	})
}

// StopStepServer stops the step server: Kargo's calls fail to connect
// until StartStepServer.
func (e *Env) StopStepServer() error {
	if e.stepsStop == nil {
		return nil
	}
	e.stepsStop()
	err := <-e.stepsDone
	e.stepsStop, e.stepsDone = nil, nil
	if err != nil {
		return fmt.Errorf("the step server stopped with an error: %w", err)
	}
	return nil
}

// StartStepServer starts a stopped step server again on its address.
func (e *Env) StartStepServer() error { return e.startStepServer() }

// RestartStepServer stops the step server and starts a fresh one on the
// same address, as a rolling restart of the replicas would: requests Kargo
// sends in between fail to connect, which the shipped tasks' error
// threshold absorbs.
func (e *Env) RestartStepServer() error {
	if err := e.StopStepServer(); err != nil {
		return err
	}
	return e.startStepServer()
}

// StartController starts kargo-fleet's orchestrating controller (the
// reconcilers and the token minter). After StopController it starts a fresh
// one, rebuilt from the API server alone.
func (e *Env) StartController() error {
	return e.StartControllerWith(nil)
}

// StartControllerWith starts the orchestrating controller like
// StartController, with its manager options changed by adjust first (a
// test wraps the client to cut it off mid-write, as a kill would).
func (e *Env) StartControllerWith(adjust func(*manager.Options)) error {
	opts := e.controllerOptions()
	if adjust != nil {
		adjust(&opts)
	}
	stop, done, err := e.startManager(opts)
	if err != nil {
		return err
	}
	e.ctrlStop, e.ctrlDone = stop, done
	return nil
}

// controllerOptions are the orchestrating controller's options: the
// environment's, reading Argo CD Applications from "argocd" as the chart's
// default does unless they say otherwise.
func (e *Env) controllerOptions() manager.Options {
	opts := e.opts.Controller
	opts.Components = manager.Orchestration
	if opts.ArgoCDNamespaces == nil {
		opts.ArgoCDNamespaces = []string{kargo.ArgoCDDefaultNamespace}
	}
	return opts
}

// StartRivalController starts one more orchestrating controller beside the
// running one, as a leader that lost its Lease but has not noticed yet
// overlaps with the new leader (the environment runs without leader
// election). The returned function stops it.
func (e *Env) StartRivalController() (func() error, error) {
	opts := e.controllerOptions()
	stop, done, err := e.startManager(opts)
	if err != nil {
		return nil, err
	}
	return func() error {
		stop()
		return <-done
	}, nil
}

func (e *Env) startManager(opts manager.Options) (context.CancelFunc, chan error, error) {
	cfg := rest.CopyConfig(e.controllerCfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	opts.Webhooks, opts.StepServerURL, opts.SkipNameValidation = false, e.StepServerURL, true
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, nil, errors.New("the controller's cache did not sync")
	}
	return cancel, done, nil
}

// StopController stops the orchestrating controller, as a crash of the
// leader would: no state survives but what is in the API server.
func (e *Env) StopController() error {
	if e.ctrlStop == nil {
		return nil
	}
	e.ctrlStop()
	err := <-e.ctrlDone
	e.ctrlStop = nil
	return err
}

// Stop stops everything.
func (e *Env) Stop() error {
	errs := []error{e.StopController()}
	if e.stepsStop != nil {
		e.stepsStop()
		errs = append(errs, <-e.stepsDone)
	}
	if e.simStop != nil {
		e.simStop()
		errs = append(errs, <-e.simDone)
	}
	errs = append(errs, e.Env.Stop())
	return errors.Join(errs...)
}

func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
