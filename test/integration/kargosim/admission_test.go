//go:build integration

package kargosim_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestAdmissionRenamesAndCopiesTemplate(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f0123456789abcdef")
	newStage(t, stage(ns, "dev").Vars("target", "cluster-1", "replicas", "2"), func(s *kargo.Stage) {
		s.Spec.PromotionTemplate.Spec.Vars = []kargo.ExpressionVariable{{Name: "fromTemplate", Value: "yes"}}
		s.Spec.PromotionTemplate.Spec.Steps = append(s.Spec.PromotionTemplate.Spec.Steps,
			kargo.PromotionStep{Uses: "compose-output", Config: cfg(`{"x":"y"}`)})
	})
	p := kargo.NewPromotion(ns, "dev", "f0123456789abcdef", map[string]string{"mine": "label"},
		map[string]string{"mine.example/id": "42"})
	// The creator's steps and vars are replaced by the Stage's.
	p.Spec.Vars = []kargo.ExpressionVariable{{Name: "sneaky", Value: "1"}}
	p.Spec.Steps = []kargo.PromotionStep{{Uses: "fail"}}
	require.NoError(t, k8s.Create(context.Background(), p))

	require.Regexp(t, regexp.MustCompile(`^dev\.[0-9a-z]{26}\.f012345$`), p.Name, "generateName is ignored")
	require.Equal(t, "label", p.Labels["mine"], "own labels are kept")
	require.Equal(t, "42", p.Annotations["mine.example/id"], "own annotations are kept")
	require.Equal(t, "dev", p.Labels[kargo.StageLabel])
	require.Contains(t, p.Annotations[kargo.CreateActorAnnotation], "kubernetes:")
	require.Len(t, p.OwnerReferences, 1)
	require.Equal(t, "Stage", p.OwnerReferences[0].Kind)
	require.Equal(t, "dev", p.OwnerReferences[0].Name)
	require.Equal(t, []kargo.ExpressionVariable{{Name: "target", Value: "cluster-1"}, {Name: "replicas", Value: "2"},
		{Name: "fromTemplate", Value: "yes"}}, p.Spec.Vars)
	require.Len(t, p.Spec.Steps, 2)
	require.Equal(t, "sync", p.Spec.Steps[0].As)
	require.Equal(t, "step-2", p.Spec.Steps[1].As, "unnamed steps get step-<n>")

	// Names sort in creation order (ULIDs), which is Kargo's queue order.
	q := mustPromote(t, ns, "dev", "f0123456789abcdef")
	require.Less(t, p.Name, q.Name)
	testutil.Await(t, k8s, q, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
}

func TestAdmissionExpandsTasks(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	task := &kargo.ClusterPromotionTask{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-notify"},
		Spec: kargo.PromotionTaskSpec{
			Vars: []kargo.ExpressionVariable{{Name: "endpoint"}, {Name: "mode", Value: "fast"}},
			Steps: []kargo.PromotionStep{
				{Uses: "compose-output", As: "start", Config: cfg(`{"endpoint":"${{ vars.endpoint }}","mode":"${{ vars.mode }}","alias":"${{ ctx.meta.step.alias }}"}`)},
				{Uses: "compose-output", Config: cfg(`{"seen":"${{ task.outputs.start.endpoint }}"}`)},
			},
		},
	}
	require.NoError(t, k8s.Create(ctx, task))
	call := kargo.PromotionStep{As: "notify", Task: &kargo.PromotionTaskRef{Kind: kargo.ClusterPromotionTaskKind, Name: task.Name},
		Vars: []kargo.ExpressionVariable{{Name: "endpoint", Value: "http://svc"}}}
	newStage(t, stage(ns, "dev").Steps(call))
	p := mustPromote(t, ns, "dev", "f1")
	require.Len(t, p.Spec.Steps, 2)
	require.Equal(t, "notify::start", p.Spec.Steps[0].As)
	require.Equal(t, "notify::step-2", p.Spec.Steps[1].As)
	require.Equal(t, []kargo.ExpressionVariable{{Name: "mode", Value: "fast"}, {Name: "endpoint", Value: "http://svc"}},
		p.Spec.Steps[0].Vars, "task defaults, then the calling step's vars")

	done := testutil.Await(t, k8s, p, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded, kargo.PromotionFailed, kargo.PromotionErrored))
	require.Equal(t, kargo.PromotionSucceeded, done.Status.Phase, done.Status.Message)
	require.JSONEq(t, `{"notify::start":{"endpoint":"http://svc","mode":"fast","alias":"notify::start"},
		"notify::step-2":{"seen":"http://svc"},
		"notify":{"endpoint":"http://svc","mode":"fast","alias":"notify::start","seen":"http://svc"}}`, string(done.Status.State.Raw))

	// A task var without a value must be supplied by the calling step.
	missing := kargo.PromotionStep{Task: &kargo.PromotionTaskRef{Kind: kargo.ClusterPromotionTaskKind, Name: task.Name}}
	newStage(t, stage(ns, "bad").Steps(missing))
	_, err := promote(ctx, k8s, ns, "bad", "f1", nil)
	require.ErrorContains(t, err, `missing value for variable "endpoint"`)
}

// TestStageWebhookRefusesIfOnTaskSteps pins Kargo v1.11.2's Stage webhook: a
// promotion-template step that references a task may have neither 'if' nor
// config; a step that uses a step kind may have both.
func TestStageWebhookRefusesIfOnTaskSteps(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	task := &kargo.PromotionTaskRef{Kind: kargo.ClusterPromotionTaskKind, Name: "fleet-rollback"}
	s := testutil.MakeStage(ns, "wave").Steps(
		kargo.PromotionStep{Uses: "http", As: "notify", If: "${{ failure() }}", Config: cfg(`{"url":"https://chat.example.com"}`)},
		kargo.PromotionStep{Task: task, As: "rollback", If: "${{ failure() }}"},
	).Obj()
	err := k8s.Create(ctx, s)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	require.ErrorContains(t, err, `spec.promotionTemplate.spec.steps[1].if: Forbidden: PromotionTemplate step referencing a task cannot have an 'if' condition`)
	require.NotContains(t, err.Error(), "steps[0]", "a step that uses a step kind may have 'if'")

	s.Spec.PromotionTemplate.Spec.Steps[1].If = ""
	require.NoError(t, k8s.Create(ctx, s), "the same template without 'if' on the task step is accepted")

	base := s.DeepCopy()
	s.Spec.PromotionTemplate.Spec.Steps[1].Config = cfg(`{"reason":"x"}`)
	err = k8s.Patch(ctx, s, client.MergeFrom(base))
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	require.ErrorContains(t, err, `spec.promotionTemplate.spec.steps[1].config: Forbidden: PromotionTemplate step referencing a task cannot have a config`)
}

// TestProjectWebhookCreatesTheNamespace: as Kargo's, the simulator's Project
// webhook creates a missing namespace labelled as a Project namespace, and
// refuses a Project whose namespace exists without that label.
func TestProjectWebhookCreatesTheNamespace(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: "webhook-made-ns"}}))
	ns := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: "webhook-made-ns"}, ns), "the webhook created the namespace")
	require.Equal(t, "true", ns.Labels[kargo.ProjectLabel])

	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain-ns"}}))
	require.Eventually(t, func() bool {
		err := k8s.Create(ctx, &kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: "plain-ns"}})
		return apierrors.IsConflict(err) && strings.Contains(err.Error(), "is not labeled as a Project namespace")
	}, 5*time.Second, 50*time.Millisecond, "a Project cannot take over a namespace that is not a Project's")
	err := k8s.Get(ctx, client.ObjectKey{Name: "plain-ns"}, &kargo.Project{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
