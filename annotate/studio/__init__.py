"""The Label Studio server and its API: starting it, its database, the client, teams, label configs."""
