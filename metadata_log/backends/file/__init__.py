"""The embedded file log (`log.FileLog`): its segments, frames, directory, meta file, checks and recovery, and the
rule that tells kraft-acl's files from foreign ones (`dir_files`).
"""
