// Package dashboard serves `kargo-fleet dashboard`: a read-only live web
// view of a Project's fleets and rollouts. Handlers answer GET and HEAD
// only; view models are built from informer caches read with the viewer's
// own credentials, and the page and its assets are embedded.
package dashboard
