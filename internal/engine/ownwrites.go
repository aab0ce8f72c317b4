package engine

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// OwnWrites remembers, per child, the version this controller's last write
// to it returned, so that the informer's event for that very version wakes
// no pass: the pass that wrote already computed its status from the
// server's answer, which is the object the event carries.
type OwnWrites struct {
	m sync.Map // child uid -> resourceVersion
}

// Record remembers the version of child that a write returned.
func (w *OwnWrites) Record(child client.Object) {
	w.m.Store(child.GetUID(), child.GetResourceVersion())
}

// ConsumeEcho is called with each version of a child the informer or a
// pass shows. It reports whether child is the version the last write
// returned, and forgets that write once child is that version or a later
// one; an older version, from before the write, keeps it. When the event
// arrives before the write's answer is recorded, it is not taken for an
// echo: the pass it wakes finds nothing to do.
func (w *OwnWrites) ConsumeEcho(child client.Object) bool {
	v, ok := w.m.Load(child.GetUID())
	if !ok {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(child.GetResourceVersion(), v.(string))
	if err == nil && order < 0 {
		return false
	}
	w.m.CompareAndDelete(child.GetUID(), v)
	return err == nil && order == 0
}

// Forget forgets the child uid (deleted).
func (w *OwnWrites) Forget(uid types.UID) { w.m.Delete(uid) }

// Len counts the writes remembered.
func (w *OwnWrites) Len() int {
	n := 0
	w.m.Range(func(any, any) bool { n++; return true })
	return n
}

// notEcho is the predicate on child events that drops the echoes of own
// writes. Any other event of a child passes.
func (w *OwnWrites) notEcho() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !w.ConsumeEcho(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !w.ConsumeEcho(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			w.Forget(e.Object.GetUID())
			return true
		},
	}
}
