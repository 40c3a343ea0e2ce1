"""A question the agent asks (run this? apply this? trust this?), and who each key belongs to
while it is up (`gate.py`)."""
