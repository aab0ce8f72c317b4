package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
)

func TestStatusWritesCacheBehind(t *testing.T) {
	app := func(rv, selector string) *appv1.AppService {
		a := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: rv}}
		a.Status.Selector = selector
		return a
	}
	for _, tc := range []struct {
		name       string
		written    *appv1.AppService // nil: no write remembered
		cached     *appv1.AppService
		behind     bool
		remembered bool
	}{
		{"should trust the cache without a write", nil, app("5", "a"), false, false},
		{"should find the cache behind an older version with another status", app("7", "new"), app("5", "old"), true, true},
		{"should forget the write once the cache shows its version", app("7", "new"), app("7", "new"), false, false},
		{"should forget the write once the cache shows its status at another version", app("7", "new"), app("9", "new"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w StatusWrites
			if tc.written != nil {
				w.Record(tc.written)
			}
			if got := w.CacheBehind(tc.cached); got != tc.behind {
				t.Errorf("CacheBehind = %v, want %v", got, tc.behind)
			}
			if got := w.Len() == 1; got != tc.remembered {
				t.Errorf("write remembered: %v, want %v", got, tc.remembered)
			}
		})
	}
}

func TestStatusWritesForgetIfShown(t *testing.T) {
	var w StatusWrites
	written := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: "20"}}
	w.Record(written)
	for _, tc := range []struct {
		rv         string
		remembered bool
	}{{"19", true}, {"20", false}} {
		shown := written.DeepCopy()
		shown.ResourceVersion = tc.rv
		w.ForgetIfShown(shown)
		if got := w.Len() == 1; got != tc.remembered {
			t.Errorf("after the informer showed version %s: remembered %v, want %v", tc.rv, got, tc.remembered)
		}
	}
}
