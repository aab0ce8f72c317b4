package testenv

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ExpectAdmission checks the API server's answer to a dry-run write: an
// error naming wantErr, or (wantErr empty) none.
func ExpectAdmission(t testing.TB, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("rejected: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("accepted, want an error naming %q", wantErr)
	case wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("error %q does not name %q", err, wantErr)
	}
}
