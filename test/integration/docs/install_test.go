//go:build integration

package docs_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/mdshell"
)

// project is what the commands' <project> becomes: the examples' namespace.
const project = "guestbook"

// placeholders are what the documented placeholders become when a command
// runs.
var placeholders = strings.NewReplacer("<project>", project, "<org>", "example")

// verdict says what the docs test does with a command.
type verdict int

const (
	// runOK: the command runs as written and must succeed.
	runOK verdict = iota
	// report: the command runs as written; it succeeded when it printed
	// its report (want), whatever its exit code, which reports the cluster.
	report
	// documentedOnly: the command is not run, for the reason given.
	documentedOnly
)

// rule decides a command by its beginning (placeholders in place).
type rule struct {
	prefix  string
	verdict verdict
	// cluster is the kubeconfig the command runs against: "fleet", "bare"
	// or "" for none.
	cluster string
	// want is what the output must contain.
	want string
	// why says why a command is only documented.
	why string
	// diagnose, when the command fails, is run on the same cluster and
	// its output added to the failure: what the cluster shows of the
	// objects the command waited for.
	diagnose string
	// within bounds the command (default 4 minutes).
	within time.Duration
	// nudge, for a command that waits on the API server, runs every
	// nudgeEvery while the command runs; its output is reported.
	nudge string
	// gone, for a command that deletes and waits, lists what it deletes
	// (a kubectl get): when the command does not end within its time but
	// the API server no longer has any of it, the deletion happened and
	// only the client's wait missed it, which the report says.
	gone string
}

// rules decide every command of docs/install.md, first match wins. A command
// no rule matches fails the test: a new command needs a rule.
var rules = []rule{
	{prefix: "make image", verdict: documentedOnly,
		why: "cross-compiles the whole command, for each platform (minutes); go test ./internal/ociimage/ and ./internal/release/ build and check an image the same way"},
	{prefix: `CRANE="go run github.com/google/go-containerregistry/cmd/crane@`, verdict: documentedOnly,
		why: "crane is used against a registry, which this test has none of"},
	{prefix: "$CRANE ", verdict: documentedOnly, why: "needs a registry and its credentials"},
	{prefix: "go run ./hack/push-layout ", verdict: documentedOnly,
		why: "needs a registry and its credentials; go test ./internal/release/ pushes to an in-process registry"},
	{prefix: "helm template kargo-fleet charts/kargo-fleet", verdict: runOK, want: ""},
	{prefix: "helm install kargo-fleet charts/kargo-fleet", verdict: runOK, cluster: "bare", want: "STATUS: deployed"},
	{prefix: "kubectl -n kargo-fleet rollout status", verdict: documentedOnly,
		why: "envtest runs no Pods: the Deployment never rolls out"},
	{prefix: "kubectl apply -n guestbook -f examples/fleetstage/prod-fleet.yaml", verdict: runOK, cluster: "fleet",
		want: "fleetstage.fleet.kargo-fleet.io/prod created"},
	{prefix: "kubectl wait -n guestbook fleetstage/prod --for=condition=Ready", verdict: runOK, cluster: "fleet",
		want: "condition met"},
	{prefix: "kargo-fleet targets prod -n guestbook", verdict: runOK, cluster: "fleet", want: "prod.eu-west-1"},
	{prefix: "kargo-fleet doctor prod -n guestbook", verdict: report, cluster: "fleet", want: "16 checks:"},
	{prefix: "kargo-fleet plan prod -n guestbook", verdict: runOK, cluster: "fleet", want: "WAVE "},
	{prefix: "kargo promote ", verdict: documentedOnly,
		why: "Kargo's own CLI talks to Kargo's API server; the Kargo simulator stands in for Kargo's controller only"},
	{prefix: "kargo-fleet status prod -n guestbook", verdict: runOK, cluster: "fleet", want: "FleetStage guestbook/prod: Ready"},
	{prefix: "kubectl label namespace guestbook fleet.kargo-fleet.io/promotion-guard=off", verdict: documentedOnly,
		why: "an emergency step of the outage runbook: switching the guard off is tested in test/integration/rollout"},
	{prefix: "helm upgrade kargo-fleet charts/kargo-fleet -n kargo-fleet --set webhook.promotionGuard.enabled=false", verdict: documentedOnly,
		why: "an emergency step of the outage runbook; the chart renders without the guard in internal/helmchart's tests"},
	{prefix: "helm upgrade kargo-fleet charts/kargo-fleet -n kargo-fleet --reset-then-reuse-values", verdict: runOK, cluster: "bare",
		want: "STATUS: deployed"},
	{prefix: "kubectl delete fleetstages --all -A", verdict: runOK, cluster: "bare"},
	{prefix: "helm uninstall kargo-fleet -n kargo-fleet", verdict: runOK, cluster: "bare", want: `release "kargo-fleet" uninstalled`},
	{prefix: "kubectl delete crd fleetstages.fleet.kargo-fleet.io fleetrollouts.fleet.kargo-fleet.io", verdict: runOK, cluster: "bare",
		want:   `"fleetrollouts.fleet.kargo-fleet.io" deleted`,
		within: 3 * time.Minute,
		gone:   "kubectl get crd fleetstages.fleet.kargo-fleet.io fleetrollouts.fleet.kargo-fleet.io --ignore-not-found -o name",
		// The API server's CRD finalizer lists a CRD's objects through a
		// watch cache it creates on first use (FleetRollouts are never read
		// on the bare cluster before): until that cache is ready the list
		// fails with "storage is (re)initializing", and the finalizer
		// retries with a doubling backoff, then only on its informer's
		// five-minute resync. Any change to a CRD besides its Terminating
		// condition queues it at once: what a waiting reader would see is
		// reported, and the CRDs are touched.
		nudge: crdConditions + "; for crd in $(kubectl get crd fleetstages.fleet.kargo-fleet.io fleetrollouts.fleet.kargo-fleet.io " +
			"--ignore-not-found -o name); do kubectl annotate $crd docs-test.kargo-fleet.io/requeue=\"$(date +%s%N)\" --overwrite; done",
		// kubectl waits for the CRDs' cleanup finalizer: what is left of
		// their objects, and of them, says why it did not end.
		diagnose: "kubectl get fleetstages,fleetrollouts -A -o name; kubectl get --raw /readyz; echo; " + crdConditions},
}

// crdConditions prints each fleet CRD left, with its deletion and
// conditions, a line each.
const crdConditions = "kubectl get crd fleetstages.fleet.kargo-fleet.io fleetrollouts.fleet.kargo-fleet.io --ignore-not-found -o jsonpath=" +
	`'{range .items[*]}{.metadata.name} deleting since {.metadata.deletionTimestamp}, finalizers {.metadata.finalizers}, ` +
	`conditions {.status.conditions}{"\n"}{end}'`

// nudgeEvery is how often a rule's nudge runs while its command waits.
const nudgeEvery = 20 * time.Second

func match(cmd string) (rule, bool) {
	for _, r := range rules {
		if strings.HasPrefix(cmd, r.prefix) {
			return r, true
		}
	}
	return rule{}, false
}

// TestInstallDoc runs docs/install.md's commands in the document's order,
// each as its rule says, and reports every command's fate as a report line.
func TestInstallDoc(t *testing.T) {
	_, err := exec.LookPath("kubectl")
	require.NoError(t, err, "the install guide's commands need kubectl on PATH")
	md, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "docs", "install.md"))
	require.NoError(t, err)
	blocks := mdshell.Blocks(md)
	require.NotEmpty(t, blocks)
	setUpFleet(t)
	prepareBare(t)

	ran := 0
	for _, b := range blocks {
		for _, c := range b.Commands {
			cmd := placeholders.Replace(c.Text)
			where := fmt.Sprintf("docs/install.md:%d (%s)", c.Line, b.Heading)
			r, ok := match(cmd)
			require.True(t, ok, "%s: no rule for %q: add one to rules", where, c.Text)
			if r.verdict == documentedOnly {
				fmt.Printf("report: %s documented only, not run: %s: %s\n", where, c.Text, r.why)
				continue
			}
			require.NotContains(t, cmd, "<", "%s: a placeholder is left in %q", where, cmd)
			stopNudging := nudge(t, where, r)
			out, err := shellWithin(t, cmd, r.cluster, r.within)
			stopNudging()
			if err != nil && r.gone != "" {
				if left, gerr := shell(t, r.gone, r.cluster); gerr == nil && strings.TrimSpace(left) == "" {
					fmt.Printf("report: %s: the command did not end (%v) though the API server deleted everything it "+
						"deletes: only its wait missed the deletion\n", where, err)
					err = nil
				}
			}
			switch r.verdict {
			case runOK:
				if err != nil && r.diagnose != "" {
					diag, derr := shell(t, r.diagnose, r.cluster)
					out += fmt.Sprintf("\n--- the API server's CRD finalizer and watch caches:\n%s", apiServerLines(t))
					out += fmt.Sprintf("\n--- %s (%v):\n%s", r.diagnose, derr, diag)
					// CI keeps report lines of a long log: the diagnosis is
					// reported line by line too.
					for _, line := range strings.Split(out, "\n") {
						fmt.Printf("report: %s failed: %s\n", where, line)
					}
				}
				require.NoError(t, err, "%s: %s\n%s", where, cmd, out)
			case report:
				require.Contains(t, out, r.want, "%s: %s printed no report (%v)", where, cmd, err)
			}
			require.Contains(t, out, r.want, "%s: %s", where, cmd)
			fmt.Printf("report: %s run: %s\n", where, c.Text)
			ran++
		}
	}
	require.GreaterOrEqual(t, ran, 10, "the install guide's commands mostly run")

	// The commands left what they say: a rendered manifest, and on the
	// bare cluster no release and no CRDs.
	rendered, err := os.ReadFile(filepath.Join(workDir, "kargo-fleet.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(rendered), "kind: Deployment")
	out, err := shell(t, "helm list -A -q", "bare")
	require.NoError(t, err, out)
	require.Empty(t, strings.TrimSpace(out))
}

// nudge runs r.nudge every nudgeEvery until the returned function is
// called, and reports what it printed.
func nudge(t *testing.T, where string, r rule) (stop func()) {
	t.Helper()
	if r.nudge == "" {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-time.After(nudgeEvery):
			}
			out, err := shell(t, r.nudge, r.cluster)
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				fmt.Printf("report: %s waiting %s (%v): %s\n", where, time.Since(start).Round(time.Second), err, line)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// apiServerLines returns the bare kube-apiserver's log lines of its CRD
// finalizer and watch caches, the last 30.
func apiServerLines(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(bareAPIServerLog)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "crd_finalizer") || strings.Contains(line, "cacher") || strings.Contains(line, "initializ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// TestHelmTemplateNeedsKubeVersion shows why the guide passes
// --kube-version: a Helm built from source assumes Kubernetes v1.20, which
// the chart refuses.
func TestHelmTemplateNeedsKubeVersion(t *testing.T) {
	out, err := shell(t, "helm template kargo-fleet charts/kargo-fleet --namespace kargo-fleet", "")
	require.Error(t, err)
	require.Contains(t, out, "incompatible with Kubernetes v1.20")
}

// shell runs cmd through bash in workDir, with kargo-fleet and helm first
// on PATH and KUBECONFIG set for cluster, and returns stdout and stderr.
func shell(t *testing.T, cmd, cluster string) (string, error) {
	t.Helper()
	return shellWithin(t, cmd, cluster, 0)
}

// shellWithin is shell with a bound on the command's time (0: 4 minutes).
func shellWithin(t *testing.T, cmd, cluster string, within time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(within, 4*time.Minute))
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", cmd)
	c.Dir = workDir
	path := binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	kubeconfig := filepath.Join(workDir, "no-cluster")
	switch cluster {
	case "fleet":
		kubeconfig = fleetKubeconfig
	case "bare":
		kubeconfig = bareKubeconfig
	}
	c.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+filepath.Join(workDir, ".helm"),
		"HELM_CONFIG_HOME="+filepath.Join(workDir, ".helm"), "HELM_DATA_HOME="+filepath.Join(workDir, ".helm"))
	var buf bytes.Buffer
	c.Stdout, c.Stderr = &buf, &buf
	err := c.Run()
	return buf.String(), err
}

// setUpFleet makes the fleet environment what the guide's "First
// FleetStage" assumes: a Kargo Project with a Warehouse's Freight requested
// by a Stage "prod" to expand, and Argo CD's production clusters.
func setUpFleet(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := fleet.Client
	require.NoError(t, c.Create(ctx, envtest.ProjectNamespace(project)))
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "guestbook"}
	require.NoError(t, c.Create(ctx, &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "prod"},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{
				Uses: "argocd-update", As: "sync",
				Config: &apiextensionsv1.JSON{Raw: []byte(`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}"}]}`)},
			}}}},
		},
	}))
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
	for name, labels := range map[string]map[string]string{
		"eu-west-1":    {"region": "eu-west-1", "tier": "critical"},
		"eu-central-1": {"region": "eu-central-1", "tier": "standard"},
		"eu-north-1":   {"region": "eu-north-1", "tier": "standard"},
		"us-east-1":    {"region": "us-east-1", "tier": "standard"},
		"us-west-2":    {"region": "us-west-2", "tier": "critical"},
		"us-sandbox-1": {"region": "us-east-1", "tier": "sandbox"},
		"ap-south-1":   {"region": "ap-south-1", "tier": "standard"},
	} {
		labels["env"] = "prod"
		labels["argocd.argoproj.io/secret-type"] = "cluster"
		require.NoError(t, c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "cluster-" + name, Labels: labels},
			StringData: map[string]string{"name": name, "server": "https://" + name + ".k8s.example.com"},
		}))
	}
}

// prepareBare makes the bare cluster what the guide's "helm install"
// assumes: the inventory namespaces exist before the install.
func prepareBare(t *testing.T) {
	t.Helper()
	out, err := shell(t, "kubectl create namespace argocd", "bare")
	require.NoError(t, err, out)
}
