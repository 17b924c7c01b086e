package kargo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// How Kargo v1.11.2 maps people who log in through its OIDC provider onto
// Kubernetes identities (api/rbac/v1alpha1/annotations.go there): a
// ServiceAccount in a Project namespace (or in one of the API server's
// global ServiceAccount namespaces) lists claim values in an annotation,
// and a person whose token carries one of them holds that ServiceAccount's
// rights. Kargo's API server checks a person's rights with a
// SubjectAccessReview for each such ServiceAccount; kargo-fleet checks the
// fleet's rights of a person named by an actor string the same way.
const (
	// OIDCClaimsAnnotation holds a JSON object of claim names to a value or
	// a list of values.
	OIDCClaimsAnnotation = "rbac.kargo.akuity.io/claims"
	// OIDCClaimAnnotationPrefix is the older form: one annotation
	// rbac.kargo.akuity.io/claim.<name> per claim, values separated by
	// commas.
	OIDCClaimAnnotationPrefix = "rbac.kargo.akuity.io/claim."
)

// ServiceAccountClaims reads the claim values a ServiceAccount's
// annotations map onto it, from both forms, each claim's values sorted and
// without duplicates. An OIDCClaimsAnnotation that is not a JSON object of
// strings or lists of strings is an error: Kargo refuses it as well.
func ServiceAccountClaims(annotations map[string]string) (map[string][]string, error) {
	claims := map[string][]string{}
	if raw, ok := annotations[OIDCClaimsAnnotation]; ok {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", OIDCClaimsAnnotation, err)
		}
		for name, v := range obj {
			values, err := stringOrList(v)
			if err != nil {
				return nil, fmt.Errorf("annotation %s: claim %q: %w", OIDCClaimsAnnotation, name, err)
			}
			claims[name] = append(claims[name], values...)
		}
	}
	for key, raw := range annotations {
		name, ok := strings.CutPrefix(key, OIDCClaimAnnotationPrefix)
		if !ok || name == "" {
			continue
		}
		for v := range strings.SplitSeq(raw, ",") {
			claims[name] = append(claims[name], strings.TrimSpace(v))
		}
	}
	for name, values := range claims {
		slices.Sort(values)
		claims[name] = slices.Compact(values)
	}
	return claims, nil
}

func stringOrList(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("want a string or a list of strings: %w", err)
	}
	return []string{one}, nil
}

// MapsActor says whether a ServiceAccount with these annotations holds the
// rights of the person an ActorOIDCClaim actor names: its claims list the
// actor's claim value. A malformed annotation maps nobody.
func MapsActor(annotations map[string]string, a Actor) bool {
	if a.Kind != ActorOIDCClaim {
		return false
	}
	claims, err := ServiceAccountClaims(annotations)
	if err != nil {
		return false
	}
	_, found := slices.BinarySearch(claims[a.Claim], a.Name)
	return found
}
