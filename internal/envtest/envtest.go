package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// K8sVersion is the kube-apiserver version the harness expects.
const K8sVersion = "v1.37.1"

// Env is a running control plane with kargo-fleet's and Kargo's CRDs, and a
// permissive Argo CD Application CRD (internal/envtest/crds).
type Env struct {
	// Config reaches the apiserver as a cluster administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme.
	Client client.Client
	// Scheme knows core kinds, kargo-fleet's kinds and the Kargo mirror.
	Scheme *apiruntime.Scheme
	// KargoCRDs says which Kargo CRDs were installed: "real" or "permissive".
	KargoCRDs string
	// WebhookHost, WebhookPort and WebhookCertDir say where the apiserver
	// calls the admission webhooks passed with WithWebhooks; a webhook server
	// must listen there with the certificate in WebhookCertDir. They are
	// empty when no webhook was passed.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string

	env *envtest.Environment
}

// NewScheme returns a scheme with every kind the project reads or writes.
func NewScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme, inventory.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// RepoRoot returns the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// KargoCRDPaths returns the Kargo CRD files or folders to install and whether
// they are Kargo's real ones: exactly the CRDs a stock Kargo v1.11.2 has, so
// no test relies on a kind that release lacks (Target, PromotionRequest).
// Tests of optional kinds install them with InstallCRDs.
func KargoCRDPaths() ([]string, bool) {
	root := RepoRoot()
	real := os.Getenv("KARGO_CRDS")
	if real == "" {
		real = filepath.Join(root, "..", "shared", "kargo", "v1.11.2", "crds")
	}
	if st, err := os.Stat(real); err == nil && st.IsDir() {
		return []string{real}, true
	}
	permissive, _ := filepath.Glob(filepath.Join(root, "internal", "kargo", "crds", "*.yaml"))
	return slices.DeleteFunc(permissive, func(p string) bool { return filepath.Base(p) == targetCRDFile }), false
}

// targetCRDFile is the CRD of Kargo's Target kind, which Kargo's main branch
// has and v1.11.2 does not.
const targetCRDFile = "kargo.akuity.io_targets.yaml"

// TargetCRDPath returns the CRD of Kargo's Target kind: Kargo's own from its
// main branch when ../shared has it, else kargo-fleet's permissive one.
func TargetCRDPath() string {
	root := RepoRoot()
	real := os.Getenv("KARGO_CRDS")
	if real == "" {
		real = filepath.Join(root, "..", "shared", "kargo", "v1.11.2", "crds")
	}
	if p := filepath.Join(real, "..", "..", "main", "crds", targetCRDFile); fileExists(p) {
		return p
	}
	return filepath.Join(root, "internal", "kargo", "crds", targetCRDFile)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// InstallCRDs installs CRDs into the running control plane and waits until
// they are served.
func (e *Env) InstallCRDs(paths ...string) error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	return err
}

// Option changes how Start sets up the control plane.
type Option func(*startOptions)

type startOptions struct {
	mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration
}

// WithWebhooks installs admission webhook configurations. Each webhook's
// clientConfig must name a service path; envtest points it at a local
// serving address (see Env.WebhookServerOptions) with its own CA.
func WithWebhooks(
	mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration,
) Option {
	return func(o *startOptions) {
		o.mutating = append(o.mutating, mutating...)
		o.validating = append(o.validating, validating...)
	}
}

// WebhookServerOptions returns the options for a controller-runtime webhook
// server that the apiserver can reach for the webhooks passed with
// WithWebhooks.
func (e *Env) WebhookServerOptions() webhook.Options {
	return webhook.Options{Host: e.WebhookHost, Port: e.WebhookPort, CertDir: e.WebhookCertDir}
}

// Start starts the control plane and installs the CRDs (and any webhooks
// passed as options). Call Stop when done.
func Start(opts ...Option) (*Env, error) {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	root := RepoRoot()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if err := os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(root, "bin", "k8s", K8sVersion)); err != nil {
			return nil, err
		}
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run 'make control-plane' (hack/build-control-plane.sh) first", assets)
	}
	kargoPaths, real := KargoCRDPaths()
	e := &envtest.Environment{
		CRDDirectoryPaths: append([]string{
			filepath.Join(root, "charts", "kargo-fleet", "files", "crds"),
			filepath.Join(root, "internal", "envtest", "crds"),
		}, kargoPaths...),
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   o.mutating,
			ValidatingWebhooks: o.validating,
		},
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("error starting envtest control plane: %w", err)
	}
	scheme := NewScheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	kind := "permissive"
	if real {
		kind = "real"
	}
	env := &Env{Config: cfg, Client: c, Scheme: scheme, KargoCRDs: kind, env: e}
	if len(o.mutating)+len(o.validating) > 0 {
		wh := e.WebhookInstallOptions
		env.WebhookHost, env.WebhookPort, env.WebhookCertDir = wh.LocalServingHost, wh.LocalServingPort, wh.LocalServingCertDir
	}
	return env, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// AddUser creates a user that authenticates with a client certificate and
// returns a config for it. The user has no rights until a role is bound.
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("error adding user %q: %w", name, err)
	}
	return u.Config(), nil
}

// ProjectNamespace returns a namespace labelled as a Kargo Project.
func ProjectNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{kargo.ProjectLabel: "true"},
	}}
}
