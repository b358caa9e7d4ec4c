@tool
extends EditorPlugin
## Enables the addon: registers nothing beyond the scripts' own `class_name`s
## (CredenceClient, CredenceSidecar, CredenceRequest, CredenceBeliefMirror, CredenceProtocol),
## which Godot 4 makes available once the addon folder is in the project.


func _enter_tree() -> void:
	pass


func _exit_tree() -> void:
	pass
