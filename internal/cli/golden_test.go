package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// update rewrites the golden files: go test ./internal/cli -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// terminal80 is standard output on an 80-column terminal.
type terminal80 struct{ bytes.Buffer }

// Width is the terminal's width.
func (*terminal80) Width() int { return 80 }

// goldenFleet is shop/prod right after a breach: the forward rollout
// halted on canary with long failure messages, its rollback running, the
// critical wave's approval command waiting, three targets drifted.
func goldenFleet() []client.Object {
	fs := fleetStage("prod-bad-rb", "prod-good", goodFreight)
	fs.Status.Targets = fleetv1alpha1.TargetCounts{Candidates: 203, Selected: 200, Excluded: 3,
		ExcludedByReason: []fleetv1alpha1.ReasonCount{{Reason: "ExcludeLabel", Count: 3}}}
	fs.Spec.Shards = &fleetv1alpha1.ShardsSpec{TargetLabel: "kargo-shard"}
	fs.Status.Shards = []fleetv1alpha1.ShardCount{{Shard: "eu", Targets: 120}, {Shard: "us", Targets: 60}, {Targets: 20}}
	fs.Status.Drift = &fleetv1alpha1.DriftStatus{Count: 3, Examples: []fleetv1alpha1.DriftedTarget{
		{Target: "eu-west-1-003", Stage: "prod-eu-west-1-003", Freight: badFreight, IntendedFreight: goodFreight}}}
	halted := rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutHalted,
		fleetv1alpha1.IntentRun, time.Minute)
	halted.Spec.Actor = "kubernetes:alice@example.com"
	halted.Status.Message = `wave "canary" breached its failure threshold: 10 of 20 targets failed, at most 2 may fail`
	halted.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
		{Name: "canary", Phase: fleetv1alpha1.WaveHalted, Total: 20, Succeeded: 8, Failed: 10, InFlight: 2},
		{Name: "general", Phase: fleetv1alpha1.WavePending, Total: 158, Pending: 158},
		{Name: "critical", Phase: fleetv1alpha1.WaveWaitingForApproval, Total: 20, Pending: 20,
			Waiting: "waiting for approval: " + kargo.ApproveCommand("shop", badFreight, "prod-critical")},
	}
	halted.Status.Failures = []fleetv1alpha1.FailureGroup{{Reason: "PromotionErrored", Count: 10,
		Examples: []fleetv1alpha1.TargetSample{
			{Name: "eu-west-1-003", Reason: `step "sync" (argocd-update) errored: Argo CD Application "eu-west-1-003" ` +
				`in namespace "argocd" is not authorized to be updated by Stage "prod-eu-west-1-003" in namespace "shop"`},
			{Name: "us-east-1-010", Reason: "Promotion failed"}}}}
	rb := rollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack,
		fleetv1alpha1.IntentRun, 2*time.Minute)
	rb.Spec.Actor = "kargo-fleet"
	rb.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 8, Succeeded: 3, InFlight: 5},
		{Name: "pilot", Phase: fleetv1alpha1.WavePending, Total: 2, Pending: 2},
	}
	good := rollout("prod-good", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutSucceeded,
		fleetv1alpha1.IntentRun, 0)
	return []client.Object{fs, halted, rb, good, freight(goodFreight, "v1.4.0"), freight(badFreight, "v1.5.0")}
}

// planFleet is shop/prod planned over inline targets, with its Project.
func planFleet() []client.Object {
	fs := testutil.MakeFleetStage("shop", "prod").
		Waves(fleetv1alpha1.Wave{Name: "pilot", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "pilot"}}},
			fleetv1alpha1.Wave{Name: "canary", Count: testutil.Percent("25%"), MaxFailures: testutil.Int(1)},
			fleetv1alpha1.Wave{Name: "general", MaxFailures: testutil.Percent("10%"), Approval: fleetv1alpha1.ApprovalRequired}).
		Obj()
	var targets []fleetv1alpha1.InlineTarget
	for _, region := range []string{"ap-south-1", "eu-central-1", "eu-west-1", "us-east-1"} {
		for i := range 3 {
			tier := "standard"
			if i == 0 && region == "us-east-1" {
				tier = "pilot"
			}
			targets = append(targets, fleetv1alpha1.InlineTarget{Name: region + "-0" + string(rune('1'+i)),
				Labels: map[string]string{"region": region, "tier": tier}})
		}
	}
	fs.Spec.Targets.Sources[0].Inline = targets
	return []client.Object{fs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
}

// runningFleet is planFleet's FleetStage with one rollout progressing.
func runningFleet() []client.Object {
	return []client.Object{planFleet()[0], rollout("prod-a", fleetv1alpha1.DirectionForward, badFreight,
		fleetv1alpha1.RolloutProgressing, fleetv1alpha1.IntentRun, time.Minute)}
}

// targetStage is the target Stage of target id of shop/prod, running
// freightName.
func targetStage(id, wave, freightName string) *kargo.Stage {
	st := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-" + id, Labels: map[string]string{
		fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
		fleetv1alpha1.WaveLabel: wave, fleetv1alpha1.TargetLabel: plan.TargetID(id)},
		Annotations: map[string]string{fleetv1alpha1.TargetNameAnnotation: id}}}
	st.Status.FreightHistory = []kargo.FreightCollection{{ID: "1",
		Items: map[string]kargo.FreightReference{"Warehouse/app": {Name: freightName}}}}
	return st
}

// planFile is a changed version of planFleet's FleetStage: an Asia wave
// before canary, and a general wave allowing one failure.
const planFile = `apiVersion: fleet.kargo-fleet.io/v1alpha1
kind: FleetStage
metadata: {name: prod, namespace: shop}
spec:
  stage: {fromStage: prod}
  targets:
    sources:
    - kind: Inline
      inline:
      - {name: ap-south-1-01, labels: {region: ap-south-1, tier: standard}}
      - {name: ap-south-1-02, labels: {region: ap-south-1, tier: standard}}
      - {name: ap-south-1-03, labels: {region: ap-south-1, tier: standard}}
      - {name: eu-central-1-01, labels: {region: eu-central-1, tier: standard}}
      - {name: eu-central-1-02, labels: {region: eu-central-1, tier: standard}}
      - {name: eu-central-1-03, labels: {region: eu-central-1, tier: standard}}
      - {name: eu-west-1-01, labels: {region: eu-west-1, tier: standard}}
      - {name: eu-west-1-02, labels: {region: eu-west-1, tier: standard}}
      - {name: eu-west-1-03, labels: {region: eu-west-1, tier: standard}}
      - {name: us-east-1-01, labels: {region: us-east-1, tier: pilot}}
      - {name: us-east-1-02, labels: {region: us-east-1, tier: standard}}
      - {name: us-east-1-03, labels: {region: us-east-1, tier: standard}}
  waves:
  - name: pilot
    selector: {matchLabels: {tier: pilot}}
  - name: asia
    selector: {matchLabels: {region: ap-south-1}}
  - name: canary
    count: 25%
    maxFailures: 1
  - name: general
    maxFailures: 1
    approval: Required
`

func TestGolden(t *testing.T) {
	t.Parallel()
	onShard := func(st *kargo.Stage, shard string) *kargo.Stage {
		st.Spec.Shard, st.Labels[kargo.ShardLabel] = shard, shard
		return st
	}
	withStages := append(planFleet(), onShard(targetStage("us-east-1-01", "pilot", badFreight), "us"),
		onShard(targetStage("eu-west-1-01", "canary", goodFreight), "eu"), targetStage("ap-south-1-01", "general", goodFreight),
		freight(goodFreight, "v1.4.0"), freight(badFreight, "v1.5.0"))
	withRollouts := runningFleet()
	status := func(s genericiooptions.IOStreams, k kubeOptions) *cobra.Command {
		return newStatusCommand(s, k, clocktesting.NewFakeClock(t0.Add(3*time.Minute)))
	}
	tests := []struct {
		name  string
		cmd   func(genericiooptions.IOStreams, kubeOptions) *cobra.Command
		objs  []client.Object
		stdin string
		args  []string
	}{
		{name: "status", cmd: status, objs: goldenFleet(), args: []string{"prod", "-n", "shop"}},
		{name: "status-ascii", cmd: status, objs: goldenFleet(), args: []string{"prod", "-n", "shop", "--ascii", "--all"}},
		{name: "targets", cmd: newTargetsCommand, objs: withStages, args: []string{"prod", "-n", "shop"}},
		{name: "history", cmd: newHistoryCommand, objs: historyFleet(), args: []string{"prod", "-n", "shop"}},
		{name: "history-target", cmd: newHistoryCommand, objs: historyFleet(),
			args: []string{"prod", "-n", "shop", "--target", "eu-west-1-003"}},
		{name: "plan", cmd: newPlanCommand, objs: planFleet(), args: []string{"prod", "-n", "shop"}},
		{name: "plan-file", cmd: newPlanCommand, objs: planFleet(), stdin: planFile, args: []string{"-f", "-"}},
		{name: "plan-local", cmd: newPlanCommand, stdin: planFile, args: []string{"-f", "-", "--local"}},
		{name: "pause", cmd: newPauseCommand, objs: withRollouts, args: []string{"prod", "-n", "shop"}},
		{name: "abort-dry-run", cmd: newAbortCommand, objs: withRollouts, args: []string{"prod", "-n", "shop", "--dry-run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut := &terminal80{}, &bytes.Buffer{}
			cmd := tt.cmd(genericiooptions.IOStreams{In: strings.NewReader(tt.stdin), Out: out, ErrOut: errOut},
				kubeOptions{client: newFakeClient("kubernetes:alice@example.com", tt.objs...)})
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			require.NoError(t, cmd.Execute(), errOut.String())
			got := out.String()
			for _, line := range strings.Split(got, "\n") {
				require.LessOrEqual(t, utf8.RuneCountInString(line), 80, "line wider than 80 columns: %q", line)
			}
			golden(t, tt.name+".golden", []byte(got))
		})
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, name, got, *update, "go test ./internal/cli -run TestGolden -update")
}
