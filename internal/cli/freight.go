package cli

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// minFreightPrefix is the shortest prefix of a Freight name accepted for
// it: the seven characters the Kargo UI, `status` and the wave Stage
// descriptions show.
const minFreightPrefix = 7

// resolveFreight finds the Freight ref names: its name, its alias, or a
// prefix of its name at least seven characters long that no other Freight
// of the namespace shares.
func resolveFreight(ctx context.Context, c client.Client, ns, ref string) (*kargo.Freight, error) {
	f := &kargo.Freight{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref}, f)
	switch {
	case err == nil:
		return f, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("error getting Freight %q: %w", ref, err)
	}
	var list kargo.FreightList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("error listing Freight in namespace %q: %w", ns, err)
	}
	var byPrefix []*kargo.Freight
	for i := range list.Items {
		item := &list.Items[i]
		if item.Alias == ref {
			return item, nil
		}
		if len(ref) >= minFreightPrefix && strings.HasPrefix(item.Name, ref) {
			byPrefix = append(byPrefix, item)
		}
	}
	switch len(byPrefix) {
	case 1:
		return byPrefix[0], nil
	case 0:
		return nil, fmt.Errorf("no Freight named or aliased %q in namespace %q", ref, ns)
	}
	return nil, fmt.Errorf("%d Freight in namespace %q have names starting with %q: give more of the name", len(byPrefix), ns, ref)
}
