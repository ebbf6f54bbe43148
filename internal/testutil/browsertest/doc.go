// Package browsertest holds the headless-Chromium test of the HTML report and
// the policy catalog: the pages load without a console error, the summary
// chart and the failing checks are visible, and the filter hides rows. It
// has no code of its own; the test saves full-page screenshots to
// $GPUHOST_SCREENSHOTS (default: a temporary directory).
package browsertest
