package engine

import (
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusWrites remembers, per resource, the last status this controller
// wrote until the cache shows it: a pass that computed its status against
// an older cached copy could find nothing to change and leave the newer,
// now wrong, status in place, so such a pass reads the resource from the
// API server instead.
type StatusWrites struct {
	m sync.Map // client.ObjectKey -> writtenStatus
}

// writtenStatus is the resourceVersion a status write returned, and a
// digest of the status it wrote.
type writtenStatus struct {
	resourceVersion string
	status          uint64
}

// Record remembers the status write whose answer is obj.
func (w *StatusWrites) Record(obj client.Object) {
	if digest, ok := StatusDigest(obj); ok {
		w.m.Store(client.ObjectKeyFromObject(obj), writtenStatus{resourceVersion: obj.GetResourceVersion(), status: digest})
	}
}

// CacheBehind reports whether cached, a copy from the cache, is older than
// the last status write of its resource. It forgets the write once cached
// shows it, at the written version or with the written status.
func (w *StatusWrites) CacheBehind(cached client.Object) bool {
	key := client.ObjectKeyFromObject(cached)
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	last := v.(writtenStatus)
	if cached.GetResourceVersion() == last.resourceVersion {
		w.m.CompareAndDelete(key, v)
		return false
	}
	if digest, ok := StatusDigest(cached); ok && digest == last.status {
		w.m.CompareAndDelete(key, v)
		return false
	}
	return true
}

// ForgetIfShown forgets the write of shown's resource once shown, a
// version the informer delivers, is the written one or a later one. The
// write's own event wakes no pass (it bumps no generation), so without
// this a resource would keep its entry until its spec changed.
func (w *StatusWrites) ForgetIfShown(shown client.Object) {
	key := client.ObjectKeyFromObject(shown)
	v, ok := w.m.Load(key)
	if !ok {
		return
	}
	order, err := resourceversion.CompareResourceVersion(shown.GetResourceVersion(), v.(writtenStatus).resourceVersion)
	if err == nil && order >= 0 {
		w.m.CompareAndDelete(key, v)
	}
}

// Forget forgets the write of the resource key (deleted, say).
func (w *StatusWrites) Forget(key client.ObjectKey) { w.m.Delete(key) }

// Len counts the writes remembered.
func (w *StatusWrites) Len() int {
	n := 0
	w.m.Range(func(any, any) bool { n++; return true })
	return n
}

// StatusDigest is a hash of obj's status (FNV-1a of the JSON of its Status
// field, whose encoding of equal values is equal); false if obj has no
// such field or it cannot be encoded. It reads nothing else of obj.
func StatusDigest(obj client.Object) (uint64, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	st := v.Elem().FieldByName("Status")
	if !st.IsValid() {
		return 0, false
	}
	data, err := json.Marshal(st.Addr().Interface())
	if err != nil {
		return 0, false
	}
	return digestOf(data), true
}
