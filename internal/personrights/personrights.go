package personrights

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Reviewer answers whether a Kubernetes user may do something, as the API
// server's authorizers would (a SubjectAccessReview).
type Reviewer interface {
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// Person is who made a gesture: the actor Kargo recorded for it, and, at
// admission of a request the person made themselves, their whole
// identity.
type Person struct {
	Actor string
	// Direct is the requesting user of a request the person made
	// themselves, with their groups; only the admission guard knows it.
	Direct *authenticationv1.UserInfo
}

// CheckedAtAdmission says the actor is a Kubernetes user's own request:
// Kargo records "kubernetes:<user>" only for requests that did not come
// through its control plane. The admission guard checked such a request
// with the user's whole identity; whoever reads the record later sees the
// user name alone, without the groups that may carry the rights, and
// relies on that check.
func CheckedAtAdmission(actor string) bool {
	return kargo.ParseActor(actor).Kind == kargo.ActorKubernetesUser
}

// Name is how messages name the person.
func (p Person) Name() string {
	if p.Actor == "" {
		return kargo.UnknownActor
	}
	return p.Actor
}

// Checker looks up and reviews a person's rights.
type Checker struct {
	reader client.Reader
	review Reviewer
	// GlobalNamespaces are the API server's global ServiceAccount
	// namespaces (its GLOBAL_SERVICE_ACCOUNT_NAMESPACES), searched besides
	// the Project's namespace.
	GlobalNamespaces []string
	// AdminHasNoFleetRights refuses Kargo's admin account every fleet right.
	AdminHasNoFleetRights bool
}

// NewChecker returns a Checker that lists ServiceAccounts (their metadata
// only) with r and reviews with rv.
func NewChecker(r client.Reader, rv Reviewer) *Checker {
	return &Checker{reader: r, review: rv}
}

// Verdict is the answer for one person and a set of rights.
type Verdict struct {
	Allowed bool
	// As names the identities reviewed ("" for the admin account).
	As string
	// Missing is the first right none of them holds.
	Missing *authorizationv1.ResourceAttributes
	// Why says, when no identity could be reviewed at all, why not.
	Why string
}

// Check answers whether p holds every one of rights in namespace: each
// right must be held by one of the person's identities.
func (c *Checker) Check(ctx context.Context, p Person, namespace string, rights []authorizationv1.ResourceAttributes) (Verdict, error) {
	ids, why, err := c.identities(ctx, p, namespace)
	if err != nil {
		return Verdict{}, err
	}
	if why != "" {
		return Verdict{Why: why}, nil
	}
	if ids == nil {
		return Verdict{Allowed: true}, nil
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		names = append(names, id.Username)
	}
	v := Verdict{As: strings.Join(names, ", ")}
	for i := range rights {
		held := false
		for _, id := range ids {
			ok, err := c.review.Allowed(ctx, id, rights[i])
			if err != nil {
				return Verdict{}, err
			}
			if ok {
				held = true
				break
			}
		}
		if !held {
			v.Missing = &rights[i]
			return v, nil
		}
	}
	v.Allowed = true
	return v, nil
}

// identities returns the Kubernetes identities whose rights p holds; nil
// with no reason for the admin account (every right); a reason when none
// can be reviewed.
func (c *Checker) identities(ctx context.Context, p Person, namespace string) ([]authenticationv1.UserInfo, string, error) {
	if p.Direct != nil {
		return []authenticationv1.UserInfo{*p.Direct}, "", nil
	}
	a := kargo.ParseActor(p.Actor)
	switch a.Kind {
	case kargo.ActorAdmin:
		if c.AdminHasNoFleetRights {
			return nil, "Kargo's admin account holds no fleet right here (the operator said so); log in as yourself", nil
		}
		return nil, "", nil
	case kargo.ActorKubernetesUser:
		return []authenticationv1.UserInfo{{Username: a.Name}}, "", nil
	case kargo.ActorOIDCClaim:
		ids, err := c.mappedServiceAccounts(ctx, a, namespace)
		if err != nil {
			return nil, "", err
		}
		if len(ids) == 0 {
			return nil, fmt.Sprintf("no ServiceAccount of namespace %q%s maps %s %q (annotation %s)", namespace,
				c.globalNote(), a.Claim, a.Name, kargo.OIDCClaimsAnnotation), nil
		}
		return ids, "", nil
	case kargo.ActorKargoController:
		return nil, "a Kargo controller acts for nobody", nil
	}
	return nil, fmt.Sprintf("Kargo recorded no one kargo-fleet can look up (actor %q)", p.Actor), nil
}

func (c *Checker) globalNote() string {
	if len(c.GlobalNamespaces) == 0 {
		return ""
	}
	return " or " + strings.Join(c.GlobalNamespaces, ", ")
}

// mappedServiceAccounts returns the ServiceAccounts mapping a's claim, as
// the users Kubernetes authenticates them as.
func (c *Checker) mappedServiceAccounts(ctx context.Context, a kargo.Actor, namespace string) ([]authenticationv1.UserInfo, error) {
	var ids []authenticationv1.UserInfo
	for _, ns := range append([]string{namespace}, c.GlobalNamespaces...) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
		if err := c.reader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("error listing ServiceAccounts in namespace %q: %w", ns, err)
		}
		for i := range list.Items {
			sa := &list.Items[i]
			if kargo.MapsActor(sa.Annotations, a) {
				ids = append(ids, serviceAccountUser(sa.Namespace, sa.Name))
			}
		}
	}
	slices.SortFunc(ids, func(x, y authenticationv1.UserInfo) int { return strings.Compare(x.Username, y.Username) })
	return slices.CompactFunc(ids, func(x, y authenticationv1.UserInfo) bool { return x.Username == y.Username }), nil
}

// serviceAccountUser is the user Kubernetes authenticates a
// ServiceAccount's token as.
func serviceAccountUser(namespace, name string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{
		Username: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// Describe says what a refusal lacked, for a message.
func (v Verdict) Describe(person string) string {
	switch {
	case v.Allowed:
		return person + " holds the rights"
	case v.Why != "":
		return v.Why
	case v.Missing != nil:
		m := v.Missing
		what := m.Resource
		if m.Group != "" {
			what += "." + m.Group
		}
		if m.Name != "" {
			what += fmt.Sprintf(" %q", m.Name)
		}
		return fmt.Sprintf("%s (reviewed as %s) lacks %s on %s in namespace %q", person, v.As, m.Verb, what, m.Namespace)
	}
	return person + " lacks the rights"
}
