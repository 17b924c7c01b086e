// Package argocd is kargo-fleet's typed mirror of the few fields of Argo
// CD's Application (argoproj.io/v1alpha1) that it reads to learn what a
// target really runs, and the pure reading of them: which Kargo Promotion,
// if any, started the Application's last sync, and where the Application
// stands. The module github.com/argoproj/argo-cd is not a dependency: its
// Application type pulls in most of Argo CD.
package argocd
