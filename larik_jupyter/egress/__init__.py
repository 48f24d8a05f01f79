"""What may leave the machine: egress policies, the one door every request passes, the ledger."""
