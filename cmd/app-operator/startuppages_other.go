//go:build !linux || keepstartuppages

package main

// releaseStartupPages does nothing outside Linux, nor in a build with the
// tag keepstartuppages.
func releaseStartupPages() {}
