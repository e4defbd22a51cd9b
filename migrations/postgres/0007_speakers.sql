-- Speakers (issue 3): who said or wrote a memory (a chat participant's name, as the `name` of a
-- message in Mem0's and Zep's APIs). A search whose query names some of a lane's speakers ranks
-- the other speakers' memories lower. '' when not given.
ALTER TABLE memories ADD COLUMN speaker TEXT NOT NULL DEFAULT '';
