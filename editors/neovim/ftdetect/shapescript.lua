-- `.ss` files are ShapeScript.
vim.filetype.add({ extension = { ss = 'shapescript' } })
