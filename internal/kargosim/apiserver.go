package kargosim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// APIServerUser is the Kubernetes user Kargo's API server acts as (its
// ServiceAccount in Kargo's chart); DefaultControlPlaneUsers matches it.
const APIServerUser = "system:serviceaccount:kargo:kargo-api"

// APIServer plays the actions of Kargo v1.11.2's API server that the Kargo UI
// and the `kargo` CLI call to promote and approve: it checks the requesting
// user's rights with SubjectAccessReviews, then writes with its own client,
// which authenticates as the API server's ServiceAccount (APIServerUser).
// Admission webhooks therefore see the API server, not the person, as the
// request's user; the person is named only in the Promotion's
// kargo.akuity.io/create-actor annotation, which the API server sets and
// Kargo's defaulting webhook keeps for control-plane requests.
type APIServer struct {
	client client.Client
	clock  clock.PassiveClock
}

// NewAPIServer returns the simulated API server writing with c, which must
// authenticate as APIServerUser (or another user ControlPlaneUsers matches)
// and may create SubjectAccessReviews, Promotions and Freight status.
func NewAPIServer(c client.Client) *APIServer {
	return &APIServer{client: c, clock: clock.RealClock{}}
}

// PromoteToStage is the UI's Promote (and "Promote from upstream", and
// `kargo promote`): after checking that user holds the custom verb promote
// on the Stage and may create Promotions, and that the Freight is available
// to it, the API server creates one Promotion with its own identity and
// records user as its create-actor.
func (a *APIServer) PromoteToStage(ctx context.Context, user authenticationv1.UserInfo,
	project, stage, freight string) (*kargo.Promotion, error) {
	st, f, err := a.stageAndFreight(ctx, project, stage, freight)
	if err != nil {
		return nil, err
	}
	if err := a.authorize(ctx, user, project, kargo.PromoteVerb, "stages", stage); err != nil {
		return nil, err
	}
	if !freightAvailable(st, f, a.clock.Now()) {
		return nil, fmt.Errorf("Freight %q is not available to Stage %q", freight, stage) //nolint:staticcheck // Kargo's wording
	}
	return a.createPromotion(ctx, user, st, freight)
}

// PromoteDownstream is the UI's "Promote to downstream" on a Stage: one
// Promotion into EVERY Stage whose requestedFreight takes the Freight's
// origin from stage, all at once. As Kargo v1.11.2 does, it first checks the
// promote verb on every downstream Stage and the Freight's availability to
// each (any failure refuses the whole request), skips downstream Stages
// whose promotion template has no steps, then creates the Promotions one by
// one: a refused create does not stop the others, and the errors come back
// joined with the Promotions that were created.
func (a *APIServer) PromoteDownstream(ctx context.Context, user authenticationv1.UserInfo,
	project, stage, freight string) ([]*kargo.Promotion, error) {
	_, f, err := a.stageAndFreight(ctx, project, stage, freight)
	if err != nil {
		return nil, err
	}
	var stages kargo.StageList
	if err := a.client.List(ctx, &stages, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("error listing Stages in project %q: %w", project, err)
	}
	downstream := downstreamOf(stages.Items, stage, f.Origin)
	if len(downstream) == 0 {
		return nil, fmt.Errorf("stage %q has no downstream stages", stage)
	}
	for _, d := range downstream {
		if err := a.authorize(ctx, user, project, kargo.PromoteVerb, "stages", d.Name); err != nil {
			return nil, err
		}
	}
	now := a.clock.Now()
	for _, d := range downstream {
		if !freightAvailable(d, f, now) {
			return nil, fmt.Errorf("Freight %q is not available to downstream Stage %q", freight, d.Name) //nolint:staticcheck // Kargo's wording
		}
	}
	var created []*kargo.Promotion
	var errs []error
	for _, d := range downstream {
		if d.Spec.PromotionTemplate != nil && len(d.Spec.PromotionTemplate.Spec.Steps) == 0 {
			continue
		}
		p, err := a.createPromotion(ctx, user, d, freight)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		created = append(created, p)
	}
	return created, errors.Join(errs...)
}

// ApproveAndPromote is the UI's Promote of Freight that does not meet the
// Stage's criteria: "Manual approval required … will bypass the unmet
// criteria", then Approve. The API server checks the promote verb, records
// the approval in the Freight's status (approvedFor[stage]) with its own
// identity, and promotes the Freight, now available, as PromoteToStage.
func (a *APIServer) ApproveAndPromote(ctx context.Context, user authenticationv1.UserInfo,
	project, stage, freight string) (*kargo.Promotion, error) {
	if err := a.Approve(ctx, user, project, stage, freight); err != nil {
		return nil, err
	}
	return a.PromoteToStage(ctx, user, project, stage, freight)
}

// Approve is the API server's approval of Freight for a Stage (the UI's
// Approve, `kargo approve`): the promote verb on the Stage, checked for
// user, then approvedFor[stage] patched into the Freight's status.
func (a *APIServer) Approve(ctx context.Context, user authenticationv1.UserInfo, project, stage, freight string) error {
	if _, _, err := a.stageAndFreight(ctx, project, stage, freight); err != nil {
		return err
	}
	if err := a.authorize(ctx, user, project, kargo.PromoteVerb, "stages", stage); err != nil {
		return err
	}
	return recordApproval(ctx, a.client, a.clock, client.ObjectKey{Namespace: project, Name: freight}, stage)
}

// downstreamOf returns the Stages that request Freight of origin from
// stage, in list order.
func downstreamOf(stages []kargo.Stage, stage string, origin kargo.FreightOrigin) []*kargo.Stage {
	var out []*kargo.Stage
	for i := range stages {
		for _, req := range stages[i].Spec.RequestedFreight {
			if req.Origin == origin && slices.Contains(req.Sources.Stages, stage) {
				out = append(out, &stages[i])
				break
			}
		}
	}
	return out
}

func (a *APIServer) stageAndFreight(ctx context.Context, project, stage, freight string) (*kargo.Stage, *kargo.Freight, error) {
	st, err := getOrNil[kargo.Stage](ctx, a.client, "Stage", project, stage)
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return nil, nil, fmt.Errorf("Stage %q not found in namespace %q", stage, project) //nolint:staticcheck // Kargo's wording
	}
	f, err := getOrNil[kargo.Freight](ctx, a.client, "Freight", project, freight)
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		return nil, nil, fmt.Errorf("freight %q not found in namespace %q", freight, project)
	}
	return st, f, nil
}

// createPromotion creates a minimal Promotion with the API server's own
// identity, after checking that user may create Promotions, as Kargo's
// authorising client does; the person goes into the create-actor
// annotation.
func (a *APIServer) createPromotion(ctx context.Context, user authenticationv1.UserInfo,
	stage *kargo.Stage, freight string) (*kargo.Promotion, error) {
	if err := a.authorize(ctx, user, stage.Namespace, "create", "promotions", ""); err != nil {
		return nil, err
	}
	p := &kargo.Promotion{
		ObjectMeta: metav1.ObjectMeta{Namespace: stage.Namespace, GenerateName: "promo-",
			Annotations: map[string]string{kargo.CreateActorAnnotation: personActor(user)}},
		Spec: kargo.PromotionSpec{Stage: stage.Name, Freight: freight},
	}
	if err := a.client.Create(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// oidcEmailExtra carries, in a UserInfo handed to the simulated API
// server, the email claim of a person logged in through Kargo's OIDC
// provider (OIDCUser).
const oidcEmailExtra = "kargosim.kargo-fleet.io/oidc-email"

// OIDCUser is a person logged in to the Kargo UI through Kargo's OIDC
// provider with this email claim, as the simulated API server's callers
// name them. Kargo's API server records such a person as "email:<email>"
// and checks their rights as the ServiceAccounts whose
// rbac.kargo.akuity.io/claims annotation lists the email, in the Project's
// namespace.
func OIDCUser(email string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{oidcEmailExtra: {email}}}
}

func oidcEmail(user authenticationv1.UserInfo) string {
	if v := user.Extra[oidcEmailExtra]; len(v) == 1 {
		return v[0]
	}
	return ""
}

// personActor is how Kargo's API server records the person it acts for.
func personActor(user authenticationv1.UserInfo) string {
	if email := oidcEmail(user); email != "" {
		return kargo.ActorEmailPrefix + email
	}
	return actorOf(user)
}

// AbortPromotion is the UI's Abort on a running Promotion (and `kargo
// abort promotion`): after checking that user may patch the Promotion, the
// API server sets the abort annotation with its own identity, naming user
// as the abort's actor (Kargo's webhook keeps it for control-plane
// requests). A Promotion that has finished is left alone.
func (a *APIServer) AbortPromotion(ctx context.Context, user authenticationv1.UserInfo, project, name string) error {
	if err := a.authorize(ctx, user, project, "patch", "promotions", name); err != nil {
		return err
	}
	p := &kargo.Promotion{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, p); err != nil {
		return err
	}
	if p.Status.Phase.IsTerminal() {
		return nil
	}
	base := p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[kargo.AbortAnnotation] = (&kargo.AbortRequest{Action: kargo.AbortTerminate, Actor: personActor(user)}).String()
	return a.client.Patch(ctx, p, client.MergeFrom(base))
}

// authorize asks the apiserver whether user may do verb on the resource:
// as the user, or, for a person logged in through OIDC, as each
// ServiceAccount of the namespace their email maps to, as Kargo's
// authorising client does.
func (a *APIServer) authorize(ctx context.Context, user authenticationv1.UserInfo, namespace, verb, resource, name string) error {
	subjects := []authenticationv1.UserInfo{user}
	if email := oidcEmail(user); email != "" {
		accounts := &corev1.ServiceAccountList{}
		if err := a.client.List(ctx, accounts, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("error listing ServiceAccounts: %w", err)
		}
		subjects = nil
		person := kargo.ParseActor(kargo.ActorEmailPrefix + email)
		for _, sa := range accounts.Items {
			if kargo.MapsActor(sa.Annotations, person) {
				subjects = append(subjects, authenticationv1.UserInfo{Username: "system:serviceaccount:" + namespace + ":" + sa.Name,
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}})
			}
		}
	}
	for _, subject := range subjects {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: subject.Username, Groups: subject.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: kargo.GroupVersion.Group, Resource: resource, Name: name, Verb: verb, Namespace: namespace,
			},
		}}
		if err := a.client.Create(ctx, sar); err != nil {
			return fmt.Errorf("error creating SubjectAccessReview: %w", err)
		}
		if sar.Status.Allowed {
			return nil
		}
	}
	return fmt.Errorf("permission denied: %s may not %s %s %q in namespace %q",
		personActor(user), verb, resource, name, namespace)
}
