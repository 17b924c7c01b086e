package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

func TestIntentCommands(t *testing.T) {
	t.Parallel()
	const (
		run   = fleetv1alpha1.IntentRun
		pause = fleetv1alpha1.IntentPause
		abort = fleetv1alpha1.IntentAbort
	)
	fwd := func(name string, phase fleetv1alpha1.RolloutPhase, intent fleetv1alpha1.RolloutIntent) *fleetv1alpha1.FleetRollout {
		return rollout(name, fleetv1alpha1.DirectionForward, badFreight, phase, intent, time.Minute)
	}
	newCmd := map[string]func(genericiooptions.IOStreams, kubeOptions) *cobra.Command{
		"pause": newPauseCommand, "resume": newResumeCommand, "abort": newAbortCommand,
	}
	tests := []struct {
		name        string
		verb        string
		rollouts    []*fleetv1alpha1.FleetRollout
		args        []string
		wantIntents map[string]fleetv1alpha1.RolloutIntent
		wantOut     []string
		wantErr     string
	}{
		{
			name: "pause sets Pause on every unfinished rollout and leaves finished ones",
			verb: "pause",
			rollouts: []*fleetv1alpha1.FleetRollout{
				fwd("a", fleetv1alpha1.RolloutProgressing, run), fwd("b", fleetv1alpha1.RolloutWaitingForApproval, ""),
				fwd("done", fleetv1alpha1.RolloutSucceeded, run),
			},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": pause, "b": pause, "done": run},
			wantOut: []string{
				"FleetRollout a (Forward to 9f8e7d6, Progressing): intent Run -> Pause\n",
				"FleetRollout b (Forward to 9f8e7d6, WaitingForApproval): intent Run -> Pause\n",
				"No new target Promotion starts; running ones finish. Resume with:\n  kargo-fleet resume prod -n shop\n",
			},
		},
		{
			name:        "pause leaves an aborted rollout aborted",
			verb:        "pause",
			rollouts:    []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutProgressing, abort)},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": abort},
			wantOut:     []string{"FleetRollout a (Forward to 9f8e7d6, Progressing): intent Abort left as it is: pause cannot follow it\n"},
		},
		{
			name:        "pausing twice says so",
			verb:        "pause",
			rollouts:    []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutPaused, pause)},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": pause},
			wantOut:     []string{"FleetRollout a (Forward to 9f8e7d6, Paused): intent already Pause\n"},
		},
		{
			name:        "resume",
			verb:        "resume",
			rollouts:    []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutPaused, pause)},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": run},
			wantOut: []string{"FleetRollout a (Forward to 9f8e7d6, Paused): intent Pause -> Run\n",
				"Follow it with:\n  kargo-fleet status prod -n shop --watch"},
		},
		{
			name: "abort a paused and a running rollout",
			verb: "abort",
			rollouts: []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutPaused, pause),
				rollout("rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack, run, 0)},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": abort, "rb": run},
			wantOut: []string{"intent Pause -> Abort",
				"FleetRollout rb (Rollback to 1a2b3c4, RollingBack): left as it is: it returns the fleet to its last good Freight; " +
					"to abort it anyway: kargo-fleet abort prod -n shop --rollout rb\n",
				"kargo-fleet rollback prod -n shop"},
		},
		{
			name: "pause spares a rollback too",
			verb: "pause",
			rollouts: []*fleetv1alpha1.FleetRollout{
				rollout("rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack, run, 0)},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"rb": run},
			wantOut:     []string{"FleetRollout rb (Rollback to 1a2b3c4, RollingBack): left as it is"},
		},
		{
			name: "a rollback named with --rollout is aborted on its own",
			verb: "abort",
			rollouts: []*fleetv1alpha1.FleetRollout{
				rollout("rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack, run, 0)},
			args:        []string{"--rollout", "rb"},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"rb": abort},
			wantOut:     []string{"FleetRollout rb (Rollback to 1a2b3c4, RollingBack): intent Run -> Abort"},
		},
		{
			name: "--rollout picks one",
			verb: "pause",
			rollouts: []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutProgressing, run),
				fwd("b", fleetv1alpha1.RolloutProgressing, run)},
			args:        []string{"--rollout", "b"},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": run, "b": pause},
		},
		{
			name:        "--rollout of a finished rollout",
			verb:        "abort",
			rollouts:    []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutFailed, run)},
			args:        []string{"--rollout", "a"},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": run},
			wantErr:     `FleetRollout "a" is Failed: a finished rollout cannot be changed`,
		},
		{
			name:    "--rollout that does not exist",
			verb:    "abort",
			args:    []string{"--rollout", "zz"},
			wantErr: `FleetRollout "zz" of FleetStage "prod" not found in namespace "shop"`,
		},
		{
			name:        "dry run changes nothing",
			verb:        "abort",
			rollouts:    []*fleetv1alpha1.FleetRollout{fwd("a", fleetv1alpha1.RolloutProgressing, run)},
			args:        []string{"--dry-run"},
			wantIntents: map[string]fleetv1alpha1.RolloutIntent{"a": run},
			wantOut:     []string{"intent Run -> Abort (dry run)\n"},
		},
		{
			name:     "nothing to do",
			verb:     "resume",
			rollouts: []*fleetv1alpha1.FleetRollout{fwd("done", fleetv1alpha1.RolloutSucceeded, run)},
			wantOut:  []string{"FleetStage shop/prod has no unfinished FleetRollout: nothing to resume.\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := []client.Object{fleetStage("", "", goodFreight)}
			for _, ro := range tt.rollouts {
				objs = append(objs, ro)
			}
			c := newFakeClient("", objs...)
			var out bytes.Buffer
			got, err := execute(newCmd[tt.verb](testStreams(&out), kubeOptions{client: c}), &out, append([]string{"prod", "-n", "shop"}, tt.args...)...)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			// Lines wrap at the output's width: compare the words.
			words := strings.Join(strings.Fields(got), " ")
			for _, w := range tt.wantOut {
				require.Contains(t, words, strings.Join(strings.Fields(w), " "))
			}
			for name, want := range tt.wantIntents {
				require.Equal(t, want, getRollout(t, c, name).Spec.Intent, "intent of %s", name)
			}
		})
	}
}

func TestIntentCommands_patchError(t *testing.T) {
	t.Parallel()
	c := newFakeClient("", fleetStage("", "", ""),
		rollout("a", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutProgressing, "", 0))
	failing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return errors.New("forbidden")
		},
	})
	var out bytes.Buffer
	_, err := execute(newPauseCommand(testStreams(&out), kubeOptions{client: failing}), &out, "-n", "shop")
	require.EqualError(t, err, `error setting intent Pause on FleetRollout "a": forbidden`)
}

func TestIntentCommands_recordActor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		user, want string
	}{
		{user: "bob", want: "kubernetes:bob"},
		{user: "", want: defaultActor}, // the server does not say who
	} {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient(tt.user, fleetStage("", "", ""),
				rollout("a", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutProgressing, "", 0),
				rollout("done", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutSucceeded, "", 0))
			var out bytes.Buffer
			_, err := execute(newAbortCommand(testStreams(&out), kubeOptions{client: c}), &out, "prod", "-n", "shop")
			require.NoError(t, err)
			a := getRollout(t, c, "a")
			require.Equal(t, fleetv1alpha1.IntentAbort, a.Spec.Intent)
			require.Equal(t, tt.want, fleetrollout.IntentActor(a), "who aborted is recorded with the intent")
			require.Empty(t, fleetrollout.IntentActor(getRollout(t, c, "done")), "an unchanged rollout records nobody")
		})
	}
}
