//go:build integration

// Package steps_test runs the fleet steps against a real kube-apiserver:
// the step server's security and idempotency with crafted requests, and the
// shipped ClusterPromotionTasks executed for real by the Kargo simulator,
// whose http steps call the step server.
package steps_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

const (
	// controllerNamespace holds the step signing key Secret.
	controllerNamespace = "kargo-fleet"
	// kargoUser is the identity of the simulated Kargo controller.
	kargoUser = "system:serviceaccount:kargo:kargo-controller"
	// fleetUser is the identity of kargo-fleet's controller.
	fleetUser = "system:serviceaccount:kargo-fleet:kargo-fleet"
)

var (
	env *envtest.Env
	// k8s is the tests' own administrator client.
	k8s client.Client
	// fleetClient acts as kargo-fleet's controller (uncached).
	fleetClient client.Client
	// keys is the step server's signing key, kept in a Secret.
	keys steptoken.KeySource
	// stepServer is the step server the simulator's http steps call.
	stepServer *recordingServer
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	mutating, validating := kargosim.WebhookConfigurations()
	var err error
	if env, err = envtest.Start(envtest.WithWebhooks(mutating, validating)); err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	log := logr.Discard()
	if os.Getenv("TEST_VERBOSE") != "" {
		log = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)

	admin := rest.CopyConfig(env.Config)
	admin.QPS, admin.Burst = 1000, 2000
	if k8s, err = client.New(admin, client.Options{Scheme: env.Scheme}); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil {
		return 0, err
	}

	// The Kargo simulator, with Kargo's own 10 s poll floor: a wave hand-off
	// faster than that proves the refresh path.
	kargoCfg, err := env.AddUser(kargoUser, "system:masters")
	if err != nil {
		return 0, err
	}
	kargoCfg.QPS, kargoCfg.Burst = 1000, 2000
	simMgr, err := ctrl.NewManager(kargoCfg, ctrl.Options{
		Scheme:        env.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(env.WebhookServerOptions()),
		Logger:        log,
	})
	if err != nil {
		return 0, err
	}
	if err := kargosim.New(simMgr, kargosim.Options{Seed: 1}).SetupWithManager(simMgr); err != nil {
		return 0, err
	}

	// kargo-fleet: the token minter on a manager, the step server behind a
	// recorder that keeps the requests Kargo sends.
	fleetCfg, err := env.AddUser(fleetUser, "system:masters")
	if err != nil {
		return 0, err
	}
	fleetCfg.QPS, fleetCfg.Burst = 1000, 2000
	if fleetClient, err = client.New(fleetCfg, client.Options{Scheme: env.Scheme}); err != nil {
		return 0, err
	}
	keySecret := types.NamespacedName{Namespace: controllerNamespace, Name: steptoken.DefaultSigningKeySecret}
	fleetMgr, err := manager.New(fleetCfg, manager.Options{
		// The minter mints a Project's token once the target guard's
		// labeler marked the namespace as a fleet Project, as on the
		// controller's leader.
		Components:         manager.TokenMinter | manager.TargetGuard,
		StepServer:         &stepserver.Options{SigningKeySecret: keySecret},
		Logger:             log,
		SkipNameValidation: true,
	})
	if err != nil {
		return 0, err
	}
	keys = steptoken.NewSecretKey("", keySecret, fleetClient, fleetClient)
	stepServer = newRecordingServer(newStepServer())
	defer stepServer.Close()

	for _, mgr := range []ctrl.Manager{simMgr, fleetMgr} {
		go func() {
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		}()
	}
	if err := waitStarted(ctx, simMgr); err != nil {
		return 0, err
	}
	if err := installTasks(ctx); err != nil {
		return 0, err
	}
	fmt.Printf("envtest: kube-apiserver %s with %s Kargo CRDs, the Kargo simulator and the step server at %s\n",
		envtest.K8sVersion, env.KargoCRDs, stepServer.URL)
	return m.Run(), nil
}

// newStepServer returns a step server as the controller builds it, on
// kargo-fleet's identity, with metrics on a registry of its own.
func newStepServer() *stepserver.Server {
	store := steps.NewAPIStore(fleetClient, fleetClient)
	return stepserver.New(stepserver.Options{}, stepserver.Deps{
		Reader:  fleetClient,
		Keys:    keys,
		Steps:   steps.DefaultSteps(store, steps.NewPlanWindows(), clock.RealClock{}),
		Metrics: prometheus.NewRegistry(),
		Clock:   clock.RealClock{},
	})
}

// waitStarted waits until the simulator's webhooks answer.
func waitStarted(ctx context.Context, mgr ctrl.Manager) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if mgr.GetWebhookServer().StartedChecker()(nil) == nil && mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the Kargo simulator did not start in time")
}

// recordedRequest is one request the step server received.
type recordedRequest struct {
	Path          string
	Authorization string
	ContentType   string
	Body          []byte
	Status        int
}

// recordingServer serves a step server's handler over HTTP and records
// every request and the status it was answered with.
type recordingServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

func newRecordingServer(s *stepserver.Server) *recordingServer {
	r := &recordingServer{}
	h := s.Handler()
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, req)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests = append(r.requests, recordedRequest{
			Path: req.URL.Path, Authorization: req.Header.Get("Authorization"),
			ContentType: req.Header.Get("Content-Type"), Body: body, Status: sw.status,
		})
	}))
	return r
}

// recorded returns the requests received so far whose body holds the
// promotion's name.
func (r *recordingServer) recorded(promotion string) []recordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recordedRequest
	for _, req := range r.requests {
		if bytes.Contains(req.Body, []byte(`"`+promotion+`"`)) {
			out = append(out, req)
		}
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
