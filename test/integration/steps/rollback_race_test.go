//go:build integration

package steps_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// TestRollback_oneRollbackWhoeverAsks races every way a rollback is asked
// for: the automatic rollback policy (the FleetRollout reconciler), 20
// concurrent fleet-rollback step calls of different steps, and the CLI. The
// rolled-back rollout ends with exactly one rollback, and every requester
// reports that one.
func TestRollback_oneRollbackWhoeverAsks(t *testing.T) {
	f := newSecurityFixture(t)
	ctx := t.Context()
	good := newFreight(t, f.ns, "f0")

	// A forward rollout that breached its threshold and failed; the
	// FleetStage rolls back automatically and records a last good Freight.
	forward, _ := f.currentRollout(t, good.Name, fleetv1alpha1.RollbackAutomatic)
	now := metav1.Now()
	breached := fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutFailed, FinishedAt: &now, Message: "wave pilot breached"}
	meta.SetStatusCondition(&breached.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
		Status: metav1.ConditionTrue, Reason: "WaveMaxFailures", Message: "1 of 1 failed"})
	setRolloutStatus(t, forward, breached, nil)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))

	const calls = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []string
		errs    []error
		cliOut  bytes.Buffer
	)
	start := make(chan struct{})
	for i := range calls {
		wg.Go(func() {
			<-start
			req := stepRequest(f.ns, "prod-pilot", f.pilot.Name, f.freight, fmt.Sprintf("rollback-%02d::start", i),
				map[string]any{"mode": "start"})
			name, err := rollbackCall(stepServer.URL, f.token, req)
			mu.Lock()
			defer mu.Unlock()
			answers, errs = append(answers, name), append(errs, err)
		})
	}
	wg.Go(func() {
		<-start
		cmd := cli.NewRootCommand(&cliOut, &cliOut)
		cmd.SetArgs([]string{"rollback", "prod", "-n", f.ns, "--kubeconfig", kubeconfig})
		err := cmd.Execute()
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	})
	// The automatic policy: a FleetRollout reconciler on kargo-fleet's
	// identity, as the controller runs it.
	startRolloutReconciler(t)
	close(start)
	wg.Wait()

	for _, err := range errs {
		require.NoError(t, err)
	}
	rollbackName := fleetrollout.RollbackName(forward.Name)
	require.Len(t, answers, calls)
	for _, name := range answers {
		require.Equal(t, rollbackName, name, "every step call reports the one rollback")
	}
	require.Regexp(t, "(Created FleetRollout|FleetRollout "+rollbackName+" already rolls back) ", cliOut.String())
	require.Contains(t, cliOut.String(), rollbackName)
	require.Eventually(t, func() bool {
		var got fleetv1alpha1.FleetRollout
		return k8s.Get(ctx, keyOf(f.ns, forward.Name), &got) == nil &&
			meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.RollbackCondition)
	}, 10*time.Second, 20*time.Millisecond, "the automatic policy found the rollback too")

	var rollbacks []string
	for _, ro := range rollouts(t, f.ns) {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			rollbacks = append(rollbacks, ro.Name)
			require.Equal(t, forward.Name, ro.Spec.RollbackOf)
			require.Equal(t, good.Name, ro.Spec.Freight.Name)
			require.Equal(t, fleetrollout.FreightLabelValue(good.Name), ro.Labels[fleetv1alpha1.FreightLabel])
		}
	}
	require.Equal(t, []string{rollbackName}, rollbacks, "exactly one rollback")
}

// rollbackCall sends a fleet-rollback request and returns the rollback it
// reports; it is safe to call from any goroutine.
func rollbackCall(url, token string, body map[string]any) (string, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequest(http.MethodPost, url+stepserver.PathPrefix+steps.RollbackStepName, bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out stepserver.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, out.Message)
	}
	name, _ := out.Outputs["rollout"].(string)
	return name, nil
}
