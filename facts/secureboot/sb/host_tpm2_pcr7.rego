# METADATA
# title: The host's TPM2-sealed LUKS key is bound to PCR 7
# description: >-
#   On a running host, the systemd-tpm2 tokens in the header of the root's LUKS volume (read from
#   the device, as GH-ENC-004 reads its key slots) name the PCRs the sealed key's policy reads;
#   with tpm2-pcrs= in /etc/crypttab, so does that line. Each that leaves out PCR 7, the Secure
#   Boot policy, lets the TPM2 unseal the key whatever boot chain the firmware trusts, and fails,
#   named. A root not sealed to a TPM2 skips, as GH-SB-003 does for the image; the two read the
#   same facts.
# scope: package
# custom:
#   id: GH-SB-007
#   severity: medium
#   location: /etc/crypttab
#   remediation: >-
#     Re-enrol the TPM2 with PCR 7: systemd-cryptenroll --wipe-slot=tpm2 --tpm2-device=auto
#     --tpm2-pcrs=7 DEVICE, and list 7 in any tpm2-pcrs= of /etc/crypttab.
#   controls:
#     nist-800-53: [SC-28, SI-7(9)]
#   targets: [host, facts]
#   requires: [encryption]
package gpuhost.sb.host_tpm2_pcr7

import data.gpuhost.sb.tpm2

skip contains tpm2.none_bound

error contains msg if some msg in tpm2.unreadable

deny contains finding if some finding in tpm2.missing_7
